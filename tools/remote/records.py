"""Read what BuildGrid itself recorded in its database (the loopback stack of tools/remote/).

Runs with the Python of BuildGrid's venv (SQLAlchemy + psycopg + buildgrid are there):

    records.py summary            workers, and the jobs each one ran (human readable)
    records.py dump OUT.json      every job with its platform properties, worker, result and the
                                  RequestMetadata Bazel sent (mnemonic, target label); every bot with
                                  the platform capabilities it registered

Nothing here is inferred from Bazel's side: it is the scheduler's own tables (jobs, job_platforms,
platform_properties, operations, request_metadata, bots, bot_platforms).
"""
import itertools
import json
import os
import sys

import sqlalchemy as sa
from buildgrid.server.scheduler.properties import hash_from_dict

STATE = os.environ.get("POLYKERN_REMOTE_STATE", "/tmp/polykern-remote")
STAGES = {0: "UNKNOWN", 1: "CACHE_CHECK", 2: "QUEUED", 3: "EXECUTING", 4: "COMPLETED"}


def _engine():
    with open(os.path.join(STATE, "db_url"), encoding="utf-8") as f:
        return sa.create_engine(f.read().strip())


def _bot_capabilities(conn, bot_name, candidates):
    """The capability sets a bot registered, decoded: BuildGrid stores hashes of every subset of a
    bot's properties in bot_platforms; match them against the subsets of the candidate properties."""
    hashes = {r[0] for r in conn.execute(
        sa.text("select platform from bot_platforms where bot_name = :b"), {"b": bot_name})}
    pairs = sorted(candidates)
    found = []
    for r in range(1, len(pairs) + 1):
        for combo in itertools.combinations(pairs, r):
            d = {}
            for k, v in combo:
                d.setdefault(k, []).append(v)
            if len(d) != len(combo):
                continue
            if hash_from_dict({k: sorted(v) for k, v in d.items()}) in hashes:
                found.append(dict(combo))
    # The largest set found is what the bot advertises (as far as the candidate keys go).
    return max(found, key=len) if found else {}


def collect():
    with _engine().connect() as conn:
        jobs = {}
        for row in conn.execute(sa.text("""
                select j.name, j.action_digest, j.worker_name, j.stage, j.status_code, j.n_tries,
                       j.instance_name, j.queued_timestamp, j.worker_start_timestamp,
                       j.worker_completed_timestamp
                from jobs j order by j.queued_timestamp""")).mappings():
            jobs[row["name"]] = {
                "job": row["name"],
                "action_digest": row["action_digest"],
                "worker": row["worker_name"],
                "stage": STAGES.get(row["stage"], str(row["stage"])),
                "status_code": row["status_code"],
                "tries": row["n_tries"],
                "instance": row["instance_name"],
                "queued": row["queued_timestamp"].isoformat() if row["queued_timestamp"] else None,
                "worker_seconds": (
                    (row["worker_completed_timestamp"] - row["worker_start_timestamp"]).total_seconds()
                    if row["worker_completed_timestamp"] and row["worker_start_timestamp"] else None),
                "platform": {},
                "requests": [],
            }
        for row in conn.execute(sa.text("""
                select jp.job_name, p.key, p.value from job_platforms jp
                join platform_properties p on p.id = jp.platform_id""")):
            if row[0] in jobs:
                jobs[row[0]]["platform"][row[1]] = row[2]
        for row in conn.execute(sa.text("""
                select o.job_name, m.action_mnemonic, m.target_id, m.configuration_id, m.tool_name,
                       m.tool_version, m.invocation_id
                from operations o left join request_metadata m on m.id = o.request_metadata_id""")).mappings():
            if row["job_name"] in jobs:
                jobs[row["job_name"]]["requests"].append({
                    "mnemonic": row["action_mnemonic"], "target": row["target_id"],
                    "configuration": row["configuration_id"], "tool": row["tool_name"],
                    "tool_version": row["tool_version"], "invocation": row["invocation_id"]})
        keys = {(r[0], r[1]) for r in conn.execute(sa.text("select key, value from platform_properties"))}
        keys |= {("OSFamily", "Linux"), ("Pool", "cpu"), ("Pool", "gpu")}
        bots = []
        for row in conn.execute(sa.text(
                "select name, bot_id, bot_status, max_capacity, last_update_timestamp from bots order by bot_id")).mappings():
            bots.append({
                "bot_id": row["bot_id"], "name": row["name"], "status": row["bot_status"],
                "max_capacity": row["max_capacity"],
                "last_update": row["last_update_timestamp"].isoformat() if row["last_update_timestamp"] else None,
                "capabilities": _bot_capabilities(conn, row["name"], keys),
            })
    return {"jobs": list(jobs.values()), "bots": bots}


def summary(rec):
    print("workers (BuildGrid bots table; capabilities decoded from bot_platforms):")
    for b in rec["bots"]:
        caps = ", ".join(f"{k}={v}" for k, v in sorted(b["capabilities"].items())) or "?"
        print(f"  {b['bot_id']:<16} {caps:<28} capacity {b['max_capacity']}  last seen {b['last_update']}")
    print(f"jobs: {len(rec['jobs'])}")
    by = {}
    for j in rec["jobs"]:
        pool = j["platform"].get("Pool", "-")
        mn = ",".join(sorted({r["mnemonic"] or "?" for r in j["requests"]})) or "?"
        key = (j["worker"] or "(unassigned)", pool, mn, j["stage"])
        by[key] = by.get(key, 0) + 1
    for (worker, pool, mn, stage), n in sorted(by.items()):
        print(f"  {worker:<16} Pool={pool:<4} {mn:<22} {stage:<10} x{n}")


def main(argv):
    if len(argv) >= 2 and argv[1] == "summary":
        summary(collect())
        return 0
    if len(argv) == 3 and argv[1] == "dump":
        rec = collect()
        with open(argv[2], "w", encoding="utf-8") as f:
            json.dump(rec, f, indent=1, sort_keys=True)
        print(f"wrote {len(rec['jobs'])} jobs, {len(rec['bots'])} bots to {argv[2]}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

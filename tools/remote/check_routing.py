"""Prove from the remote-execution engine's own records where //tests:cross_compile ran.

    check_routing.py executed --exec-log E.json --records R.json --worker-log cpu=W1 --worker-log gpu=W2 \
        --testlogs DIR --gpu-target //tests:cross_compile_cuda [--expect-run llvm,opencl,...]
    check_routing.py cached --exec-log E.json --jobs-before N --records R.json
    check_routing.py self-test <same arguments as 'executed'>

`executed` (a run on a fresh stack): every PolykernCompile and TestRunner spawn of Bazel's execution
log ran remotely; for each, BuildGrid's database (records.py dump) holds a completed job with the
same action digest, the RequestMetadata Bazel sent (mnemonic, target label), its platform properties
and the worker that ran it; that worker registered the matching Pool (bot_platforms), and the
worker's own log shows the lease. Compile actions: Pool=cpu on the cpu-pool worker. GPU-tagged tests
(--gpu-target): Pool=gpu on the gpu-pool worker. Other tests: the cpu pool. The GPU tests' device
case is reported <skipped message=...> in their test.xml (this stack has no GPU: they never pass
by pretending); the configurations named by --expect-run really launched kernels (not skipped).

`cached` (the same build again after `bazel clean`): every such spawn was a remote cache hit and
BuildGrid scheduled no new job.

`self-test`: runs the `executed` checks on copies of the real records with one thing wrong each
(a compile job on the gpu worker, the GPU test on the cpu pool, a job missing, a lease missing from a
worker log, the GPU test's skipped launch turned into a pass) and fails unless every one is caught.

Exit status 0 when every check holds; the report lists what was checked and every problem found.
"""
import argparse
import copy
import json
import os
import sys
import xml.etree.ElementTree as ET

MNEMONICS = ("PolykernCompile", "TestRunner")
POOL_BOT = {"cpu": "polykern-cpu-0", "gpu": "polykern-gpu-0"}
RUN_CASE = "test_loads_and_runs_on_the_device"


def read_exec_log(path):
    """Bazel's --execution_log_json_file: a stream of JSON objects, one per spawn."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    dec, i, out = json.JSONDecoder(), 0, []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        obj, i = dec.raw_decode(text, i)
        out.append(obj)


def spawns_of_interest(exec_log):
    out = []
    for s in exec_log:
        if s.get("mnemonic") in MNEMONICS:
            d = s.get("digest") or {}
            out.append({
                "mnemonic": s["mnemonic"],
                "target": s.get("targetLabel", ""),
                "runner": s.get("runner", ""),
                "cache_hit": bool(s.get("cacheHit")),
                "digest": f"{d.get('hash', '')}/{d.get('sizeBytes', '')}",
                "platform": {p["name"]: p["value"] for p in (s.get("platform") or {}).get("properties", [])},
                "exit_code": s.get("exitCode", 0),
            })
    return out


def _case_status(xml_path, case):
    """('passed'|'skipped'|'failure'|'error'|'missing', message) of one test case in a JUnit XML."""
    try:
        root = ET.parse(xml_path).getroot()
    except (OSError, ET.ParseError) as e:
        return "missing", f"{xml_path}: {e}"
    for tc in root.iter("testcase"):
        if tc.get("name") == case:
            for tag in ("failure", "error", "skipped"):
                el = tc.find(tag)
                if el is not None:
                    return tag, el.get("message", "")
            return "passed", ""
    return "missing", f"no test case {case} in {xml_path}"


def test_xml(testlogs, label):
    pkg, name = label.lstrip("/").split(":")
    return os.path.join(testlogs, pkg, name, "test.xml")


def check_executed(spawns, records, worker_logs, testlogs, gpu_targets, expect_run):
    """Returns (facts, problems): lines that were verified, and what is wrong."""
    facts, problems = [], []
    jobs_by_digest = {}
    for j in records["jobs"]:
        jobs_by_digest.setdefault(j["action_digest"], []).append(j)
    bots = {b["bot_id"]: b for b in records["bots"]}
    for pool, bot in POOL_BOT.items():
        caps = bots.get(bot, {}).get("capabilities", {})
        if caps.get("Pool") != pool:
            problems.append(f"BuildGrid has no bot {bot} registered with Pool={pool} (bots: "
                            f"{ {b: v.get('capabilities') for b, v in bots.items()} })")
    if not spawns:
        problems.append("the execution log has no PolykernCompile or TestRunner spawn")
    counts = {}
    for s in spawns:
        what = f"{s['mnemonic']} {s['target']}"
        if s["runner"] != "remote" or s["cache_hit"]:
            problems.append(f"{what}: Bazel did not execute it remotely (runner={s['runner']!r}, "
                            f"cache hit={s['cache_hit']})")
            continue
        want_pool = "gpu" if (s["mnemonic"] == "TestRunner" and s["target"] in gpu_targets) else "cpu"
        if s["platform"].get("Pool") != want_pool:
            problems.append(f"{what}: Bazel asked for Pool={s['platform'].get('Pool')}, expected {want_pool}")
        done = [j for j in jobs_by_digest.get(s["digest"], [])
                if j["stage"] == "COMPLETED" and j["worker"] and j["status_code"] in (0, None)]
        if not done:
            problems.append(f"{what}: BuildGrid has no completed job for action {s['digest']}")
            continue
        j = done[-1]
        meta = [(r["mnemonic"], r["target"]) for r in j["requests"]]
        if (s["mnemonic"], s["target"]) not in meta:
            problems.append(f"{what}: job {j['job']} carries request metadata {meta}, not this action")
        if j["platform"].get("Pool") != want_pool:
            problems.append(f"{what}: BuildGrid queued it with Pool={j['platform'].get('Pool')}, expected {want_pool}")
        if j["worker"] != POOL_BOT[want_pool]:
            problems.append(f"{what}: ran on worker {j['worker']}, expected the {want_pool}-pool worker "
                            f"{POOL_BOT[want_pool]}")
        lease = f"leaseId {j['instance']}/{j['job']}"
        for pool, text in worker_logs.items():
            seen = lease in text
            if pool == want_pool and not seen:
                problems.append(f"{what}: the {pool}-pool worker's log does not show lease {j['job']}")
            if pool != want_pool and seen:
                problems.append(f"{what}: the {pool}-pool worker's log shows lease {j['job']}")
        counts[(s["mnemonic"], want_pool, j["worker"])] = counts.get((s["mnemonic"], want_pool, j["worker"]), 0) + 1
    for (mn, pool, worker), n in sorted(counts.items()):
        facts.append(f"{n} x {mn}: Pool={pool}, ran on {worker} (BuildGrid jobs table + worker log lease)")
    if not any(mn == "PolykernCompile" for mn, _, _ in counts):
        problems.append("no PolykernCompile action was proven to run remotely")
    tests = sorted({s["target"] for s in spawns if s["mnemonic"] == "TestRunner"})
    for label in sorted(gpu_targets):
        if label not in tests:
            problems.append(f"GPU test {label} did not run in this build")
    for label in tests:
        status, msg = _case_status(test_xml(testlogs, label), RUN_CASE)
        config = label.rsplit("_", 1)[-1]
        if label in gpu_targets:
            if status != "skipped" or not msg:
                problems.append(f"{label}: on a worker without a GPU its device launch must be skipped with a "
                                f"reason, but test.xml says {status} {msg!r}")
            else:
                facts.append(f"{label}: device launch SKIPPED on the gpu-pool worker: {msg}")
        elif config in expect_run:
            if status != "passed":
                problems.append(f"{label}: expected kernels to run on {config}, test.xml says {status} {msg!r}")
            else:
                facts.append(f"{label}: kernels ran on {config} (remote, cpu pool)")
        else:
            facts.append(f"{label}: device case {status}{': ' + msg if msg else ''}")
    return facts, problems


def check_cached(spawns, jobs_before, records):
    facts, problems = [], []
    if not spawns:
        problems.append("the execution log has no PolykernCompile or TestRunner spawn")
    for s in spawns:
        if not s["cache_hit"]:
            problems.append(f"{s['mnemonic']} {s['target']}: not a remote cache hit (runner={s['runner']!r})")
    n = len(records["jobs"])
    if n != jobs_before:
        problems.append(f"BuildGrid scheduled {n - jobs_before} new job(s) during the cached run")
    facts.append(f"{sum(s['cache_hit'] for s in spawns)}/{len(spawns)} PolykernCompile/TestRunner spawns were "
                 f"remote cache hits; BuildGrid jobs before/after: {jobs_before}/{n}")
    return facts, problems


def self_test(spawns, records, worker_logs, testlogs, gpu_targets, expect_run):
    """Each mutation of the real evidence must be caught by check_executed."""
    import shutil
    import tempfile

    base_facts, base_problems = check_executed(spawns, records, worker_logs, testlogs, gpu_targets, expect_run)
    if base_problems:
        return [f"self-test needs clean evidence, but: {p}" for p in base_problems]
    digest = {s["digest"]: s for s in spawns}
    compile_job = next(j for j in records["jobs"] if j["stage"] == "COMPLETED"
                       and digest.get(j["action_digest"], {}).get("mnemonic") == "PolykernCompile")
    gpu_job = next(j for j in records["jobs"] if j["stage"] == "COMPLETED"
                   and digest.get(j["action_digest"], {}).get("target") in gpu_targets)
    failures = []

    def expect_caught(name, recs=records, logs=worker_logs, tl=testlogs):
        _, probs = check_executed(spawns, recs, logs, tl, gpu_targets, expect_run)
        print(f"  self-test {name}: {'caught: ' + probs[0] if probs else 'NOT CAUGHT'}")
        if not probs:
            failures.append(f"self-test: '{name}' was not detected")

    r = copy.deepcopy(records)
    for j in r["jobs"]:
        if j["job"] == compile_job["job"]:
            j["worker"] = POOL_BOT["gpu"]
    expect_caught("a compile job ran on the gpu-pool worker", recs=r)
    r = copy.deepcopy(records)
    for j in r["jobs"]:
        if j["job"] == gpu_job["job"]:
            j["worker"], j["platform"]["Pool"] = POOL_BOT["cpu"], "cpu"
    expect_caught("the GPU test was queued on the cpu pool", recs=r)
    r = copy.deepcopy(records)
    r["jobs"] = [j for j in r["jobs"] if j["action_digest"] != compile_job["action_digest"]]
    expect_caught("a compile action has no job in BuildGrid", recs=r)
    logs = dict(worker_logs)
    logs["gpu"] = logs["gpu"].replace(gpu_job["job"], "x")
    expect_caught("the gpu worker's log lacks the GPU test's lease", logs=logs)
    tmp = tempfile.mkdtemp()
    try:
        for label in gpu_targets:
            src = test_xml(testlogs, label)
            dst = test_xml(tmp, label)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            tree = ET.parse(src)
            for tc in tree.getroot().iter("testcase"):
                for el in list(tc):
                    if el.tag == "skipped":
                        tc.remove(el)
            tree.write(dst)
        for s in spawns:
            if s["mnemonic"] == "TestRunner" and s["target"] not in gpu_targets:
                dst = test_xml(tmp, s["target"])
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy(test_xml(testlogs, s["target"]), dst)
        expect_caught("the GPU test's launch reported as passed without a GPU", tl=tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return failures


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["executed", "cached", "self-test"])
    ap.add_argument("--exec-log", required=True)
    ap.add_argument("--records", required=True)
    ap.add_argument("--worker-log", action="append", default=[], metavar="POOL=PATH")
    ap.add_argument("--testlogs")
    ap.add_argument("--gpu-target", action="append", default=[])
    ap.add_argument("--expect-run", default="", help="comma-separated configurations that must launch kernels")
    ap.add_argument("--jobs-before", type=int)
    a = ap.parse_args(argv[1:])
    spawns = spawns_of_interest(read_exec_log(a.exec_log))
    with open(a.records, encoding="utf-8") as f:
        records = json.load(f)
    if a.mode == "cached":
        facts, problems = check_cached(spawns, a.jobs_before, records)
    else:
        logs = {}
        for item in a.worker_log:
            pool, path = item.split("=", 1)
            with open(path, encoding="utf-8", errors="replace") as f:
                logs[pool] = f.read()
        if set(logs) != set(POOL_BOT):
            ap.error("give --worker-log cpu=PATH and --worker-log gpu=PATH")
        expect = {c for c in a.expect_run.split(",") if c}
        gpu = set(a.gpu_target)
        if a.mode == "self-test":
            facts, problems = [], self_test(spawns, records, logs, a.testlogs, gpu, expect)
        else:
            facts, problems = check_executed(spawns, records, logs, a.testlogs, gpu, expect)
    for line in facts:
        print(f"  ok: {line}")
    for p in problems:
        print(f"  PROBLEM: {p}")
    print(f"check_routing {a.mode}: {'FAILED' if problems else 'ok'} ({len(problems)} problem(s))")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

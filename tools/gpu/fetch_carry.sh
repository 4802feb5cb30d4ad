#!/usr/bin/env bash
# Download, on a networked host, what the GPU machine needs to build pycuda and run polykern's CUDA
# tests (it has Python 3.12, the CUDA toolkit, numpy, llvmlite, pytest... and no network):
#
#     tools/gpu/fetch_carry.sh            # from the repository root; fills ./.whl/
#
# - the pycuda sdist: `pip download` of it fails (pip runs its setup.py for metadata, which needs a
#   CUDA toolkit), so its URL and sha256 are read from the package index's simple page and the file
#   is fetched with curl and checked;
# - cp312 manylinux wheels (pip download --no-deps) of pycuda's runtime deps, the test deps, and
#   setuptools/wheel in case the machine lacks them. gpu_setup.sh installs only the ones the machine
#   does not already have.
# Files already in .whl/ are kept. .whl/ is ignored by git (.gitignore and .git/info/exclude) and is
# carried to the GPU machine explicitly (device tool: carry [".whl"]).
set -euo pipefail

REPO=$(pwd)
[ -f "$REPO/python/polykern/__init__.py" ] || { echo "run this from the polykern repository root" >&2; exit 2; }
DEST="$REPO/.whl"
PY=${PYTHON:-python3}
PYCUDA_VERSION=${PYCUDA_VERSION:-2026.1}
# name==version, one version each (two versions of one package stop the install there)
WHEELS=(
    pytools==2026.1.1 platformdirs==4.14.5 siphash24==1.9 typing_extensions==4.16.0   # pycuda (pytools)
    mako==1.4.3 markupsafe==3.0.4                                                     # pycuda (mako)
    pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1 packaging==26.3                      # tests
    hypothesis==6.170.15 sortedcontainers==2.4.0 attrs==26.1.0                        # tests
    setuptools==80.9.0 wheel==0.45.1                                                  # building pycuda
    pyopencl==2026.1.4 vulkan==1.3.275.1 cffi==2.1.1 pycparser==3.12                  # OpenCL, Vulkan
    wgpu==0.32.0 rendercanvas==2.7.2                                                  # WebGPU
)
# Debian packages NVIDIA's Vulkan driver needs beside it (the GPU image has no Vulkan/GL loaders):
# unpacked there by run_other_runtimes.sh. Downloaded with apt-get from this host's own sources.
DEBS=(libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
PLATFORMS=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64)

mkdir -p "$DEST"
mkdir -p "$REPO/.git/info" 2>/dev/null || true
grep -qxF '/.whl/' "$REPO/.git/info/exclude" 2>/dev/null || echo '/.whl/' >> "$REPO/.git/info/exclude"
grep -qxF '/.whl/' "$REPO/.gitignore" 2>/dev/null || echo "note: .gitignore does not list /.whl/" >&2

# ------------------------------------------------------------------ pycuda sdist
INDEX=${PIP_INDEX_URL:-$($PY -m pip config get global.index-url 2>/dev/null || true)}
INDEX=${INDEX:-https://pypi.org/simple}
SDIST="pycuda-$PYCUDA_VERSION.tar.gz"
if [ -f "$DEST/$SDIST" ]; then
    echo "have $SDIST"
else
    PAGE=$(mktemp)
    trap 'rm -f "$PAGE"' EXIT
    echo "reading ${INDEX%/}/pycuda/"
    curl -fsSL --retry 3 -H "Accept: text/html" "${INDEX%/}/pycuda/" -o "$PAGE"
    # -> "URL SHA256" of the sdist (PEP 503 page: <a href="URL#sha256=...">pycuda-X.tar.gz</a>)
    read -r URL SHA < <($PY - "$PAGE" "$SDIST" "${INDEX%/}/pycuda/" <<'EOF'
import html, re, sys, urllib.parse
page, want, base = open(sys.argv[1], encoding="utf-8").read(), sys.argv[2], sys.argv[3]
for href, text in re.findall(r'<a\s[^>]*href="([^"]+)"[^>]*>([^<]+)</a>', page):
    if text.strip() == want:
        url, _, frag = html.unescape(href).partition("#")
        sha = frag[len("sha256="):] if frag.startswith("sha256=") else "-"
        print(urllib.parse.urljoin(base, url), sha)
        break
else:
    sys.exit(f"{want} is not listed on {base}")
EOF
)
    echo "fetching $URL"
    curl -fsSL --retry 3 "$URL" -o "$DEST/$SDIST.part"
    if [ "$SHA" != "-" ]; then
        echo "$SHA  $DEST/$SDIST.part" | sha256sum -c - >/dev/null || { echo "sha256 mismatch for $SDIST" >&2; rm -f "$DEST/$SDIST.part"; exit 1; }
        echo "sha256 ok"
    else
        echo "warning: the index gives no sha256 for $SDIST" >&2
    fi
    mv "$DEST/$SDIST.part" "$DEST/$SDIST"
fi

# ------------------------------------------------------------------ wheels for cp312
PLAT_ARGS=()
for p in "${PLATFORMS[@]}"; do PLAT_ARGS+=(--platform "$p"); done
for req in "${WHEELS[@]}"; do
    norm=$(echo "$req" | sed 's/==/-/' | tr 'A-Z.-' 'a-z__')   # pytools_2026_1_1
    if ls "$DEST" | tr 'A-Z.-' 'a-z__' | grep -q "^${norm}_.*whl\$"; then
        echo "have $req"
        continue
    fi
    echo "downloading $req"
    $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        "${PLAT_ARGS[@]}" -d "$DEST" "$req"
done

# ------------------------------------------------------------------ loader .debs -> ./.gl/
GL="$REPO/.gl"
mkdir -p "$GL"
for d in "${DEBS[@]}"; do
    if ls "$GL" | grep -q "^${d}_.*\.deb\$"; then echo "have $d"; continue; fi
    echo "downloading $d.deb"
    (cd "$GL" && apt-get download -q "$d" >/dev/null 2>&1) || { (apt-get update -qq && cd "$GL" && apt-get download -q "$d"); }
done

echo
echo "$DEST now holds ($(du -sh "$DEST" | cut -f1)):"
ls -1 "$DEST"

"""Regenerate hpc/data/bnlearn.json.gz from the pinned pgmpy wheel.

Why a committed JSON: compute nodes of HPC clusters rarely reach the internet, so the
network library ships inside the package. This script documents (and re-checks) where
every structure comes from: pgmpy 1.1.2's wheel (MIT), read without importing pgmpy,
plus bnlearn's published model string for healthcare, which pgmpy lacks.

Usage: python scripts/import_bnlearn.py [--wheel PATH] [-o hpc/data/bnlearn.json.gz]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "pgmpy-1.1.2-py3-none-any.whl"
WHEEL_SHA256 = "e55c78763a4a45dd644a13b250cea86af0c7e08590cf35de489624f34a4d9a0b"
PREFIX = "pgmpy/utils/example_models/"
HEALTHCARE = "[A][C|A][H|A][D|A:H][I|C:D][O|A][T|O:I]"

_VARIABLE = re.compile(r"^\s*variable\s+(\S+)\s*\{", re.MULTILINE)
_PROBABILITY = re.compile(r"^\s*probability\s*\(\s*([^|)\s]+)\s*(?:\|\s*([^)]*))?\)", re.MULTILINE)


def parse_bif(text: str) -> dict:
    """Nodes (file order) and arcs (parent, child) of a BIF file."""
    nodes = _VARIABLE.findall(text)
    arcs = []
    for child, parents in _PROBABILITY.findall(text):
        arcs += [[p.strip(), child] for p in parents.split(",") if p.strip()]
    return {"nodes": nodes, "arcs": arcs}


def parse_model_string(model: str) -> dict:
    """bnlearn's `[A][B|A:C]` notation."""
    nodes, arcs = [], []
    for term in re.findall(r"\[([^\]]+)\]", model):
        child, _, parents = term.partition("|")
        nodes.append(child)
        arcs += [[p, child] for p in parents.split(":") if p]
    return {"nodes": nodes, "arcs": arcs}


def download_wheel(folder: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder),
                    "pgmpy==1.1.2"], check=True)
    return folder / WHEEL


def read_structures(wheel: Path) -> dict[str, dict]:
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        raise SystemExit(f"{wheel}: sha256 {digest} is not the pinned {WHEEL_SHA256}")
    out: dict[str, dict] = {}
    with zipfile.ZipFile(wheel) as zf:
        for name in sorted(zf.namelist()):
            if not name.startswith(PREFIX):
                continue
            stem = name[len(PREFIX):]
            if stem.endswith(".bif.gz"):
                out[stem[:-7]] = parse_bif(gzip.decompress(zf.read(name)).decode())
            elif stem.endswith(".json"):
                raw = json.loads(zf.read(name))
                out[stem[:-5]] = {"nodes": raw["nodes"], "arcs": [list(a) for a in raw["arcs"]]}
    out["healthcare"] = parse_model_string(HEALTHCARE)
    return dict(sorted(out.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel", type=Path, help="a local copy of " + WHEEL)
    ap.add_argument("-o", "--output", type=Path, default=Path(__file__).parents[1] / "hpc/data/bnlearn.json.gz")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wheel = args.wheel or download_wheel(Path(tmp))
        structures = read_structures(wheel)
    doc = {"source": f"{WHEEL} (sha256 {WHEEL_SHA256}, MIT) and bnlearn's healthcare model string",
           "networks": structures}
    payload = (json.dumps(doc, separators=(",", ":")) + "\n").encode()
    args.output.write_bytes(gzip.compress(payload, mtime=0))
    for name, s in structures.items():
        print(f"{name:12s} {len(s['nodes']):5d} nodes {len(s['arcs']):5d} arcs")


if __name__ == "__main__":
    main()

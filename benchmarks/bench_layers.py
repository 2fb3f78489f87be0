"""How long a 1M-token vocabulary takes to generate, build, call and export.

Writes a synthetic artifact directory (one string feature with N tokens; file vocabulary)
and times: ``beam-prep generate``, ``build_preprocessor()`` of the generated module, one
call on a batch, ``model.export()``; prints the SavedModel size (the vocabulary travels
as an asset). Run: ``python benchmarks/bench_layers.py [--tokens 1000000]``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from beam_prep.io.contract.artifacts import canonical_json, manifest_fingerprint  # noqa: E402


def write_big_artifacts(path: str, tokens: int) -> None:
    vocab = "".join(f"tok{i:08d}\n" for i in range(tokens)).encode()
    side = "".join(json.dumps([f"tok{i:08d}", tokens - i]) + "\n"
                   for i in range(tokens)).encode()
    os.makedirs(os.path.join(path, "vocab"))
    files = {}
    for role, rel, data in (("vocabulary", "vocab/item.txt", vocab),
                            ("counts", "vocab/item.counts.jsonl", side)):
        with open(os.path.join(path, rel), "wb") as f:
            f.write(data)
        files[role] = {"path": rel, "sha256": hashlib.sha256(data).hexdigest(),
                       "bytes": len(data)}
    drop = {"tokens": 0, "count": 0}
    manifest = {"format": "beam_prep.artifacts", "format_version": 1,
                "spec": {"version": 1, "features": [{
                    "name": "item", "kind": "string", "column": None, "top_k": None,
                    "min_count": 1, "num_oov_indices": 1, "mask_token": None,
                    "output_mode": "int", "default_value": None}]},
                "versions": {}, "input": {"patterns": ["synthetic"], "format": "csv",
                                          "rows_read": tokens, "rows_rejected": 0},
                "features": {"item": {"kind": "string", "files": files, "stats": {
                    "vocabulary_size": tokens, "distinct_values": tokens,
                    "total_count": tokens, "missing_count": 0, "dropped_min_count": drop,
                    "dropped_top_k": drop, "excluded_unwritable": drop}}}}
    manifest["fingerprint"] = manifest_fingerprint(manifest)
    with open(os.path.join(path, "manifest.json"), "wb") as f:
        f.write(canonical_json(manifest))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, default=1_000_000)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench_layers_")
    art = os.path.join(work, "artifacts")
    write_big_artifacts(art, args.tokens)
    from beam_prep.codegen.render import generate

    t0 = time.perf_counter()
    generate(art, os.path.join(work, "pp.py"), overwrite=True)  # a scratch folder
    t1 = time.perf_counter()
    spec = importlib.util.spec_from_file_location("pp", os.path.join(work, "pp.py"))
    pp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pp)
    import keras
    import tensorflow as tf

    t2 = time.perf_counter()
    model = pp.build_preprocessor(art)
    t3 = time.perf_counter()
    out = model({"item": tf.constant([["tok00000000"], ["tok00999999"], ["nope"]])})
    t4 = time.perf_counter()
    inputs = pp.raw_inputs()
    exported = keras.Model(inputs, model(inputs))
    exported.export(os.path.join(work, "export"), verbose=False)
    t5 = time.perf_counter()
    size = sum(os.path.getsize(os.path.join(d, f))
               for d, _, fs in os.walk(os.path.join(work, "export")) for f in fs)
    pb = os.path.getsize(os.path.join(work, "export", "saved_model.pb"))
    print(f"tokens={args.tokens:,}  lookup={out['item'].numpy().ravel().tolist()}")
    print(f"generate (incl. sha256 verify): {t1 - t0:.2f} s")
    print(f"build_preprocessor (fingerprint + file checks + table init): {t3 - t2:.2f} s")
    print(f"first call: {t4 - t3:.2f} s   export: {t5 - t4:.2f} s")
    print(f"export size {size / 1e6:.1f} MB (saved_model.pb {pb / 1e3:.0f} KB)")


if __name__ == "__main__":
    main()

"""Cost of TFRecord CRC checking: the reader with and without payload-CRC verification.

Runs, interleaved ``--repeats`` times: ``iter_tfrecord`` over every column of a file with
payload CRCs checked and unchecked (length CRCs are always checked), plus raw CRC-32C
throughput of the native code (SSE4.2 and slice-by-8) and of google-crc32c. Prints the
median seconds of each and the overhead of the payload check.

Example:
    $ python benchmarks/gen_criteo.py --rows 500000 --rows_per_file 500000 \\
        --out /tmp/criteo_500k --formats tfrecord --seed 1
    $ python benchmarks/bench_tfrecord_crc.py /tmp/criteo_500k/tfrecord/part-00000.tfrecord
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from beam_prep.io.inputs import example_decoder
from beam_prep.io.inputs.tfrecord_reader import first_records, iter_tfrecord


def _read(path: str, columns: list[str], check: bool) -> tuple[float, int]:
    start = time.perf_counter()
    rows = 0
    with open(path, "rb") as f:
        for b in iter_tfrecord(f, columns, batch_size=65536, source=path,
                               check_data_crc=check):
            rows += b.batch.num_rows
    return time.perf_counter() - start, rows


def _crc_rate(fn, data: memoryview) -> float:
    start = time.perf_counter()
    fn(data)
    return len(data) / (time.perf_counter() - start) / 1e9


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("path")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    from tfx_bsl.coders import example_coder

    with open(args.path, "rb") as f:
        head = first_records(f, args.path, 100)
    columns = sorted(example_coder.ExamplesToRecordBatchDecoder().DecodeBatch(head)
                     .schema.names)
    times: dict[str, list[float]] = {"checked": [], "unchecked": []}
    for _ in range(args.repeats):
        for name, check in (("unchecked", False), ("checked", True)):
            seconds, rows = _read(args.path, columns, check)
            times[name].append(seconds)
    checked, unchecked = (statistics.median(times[k]) for k in ("checked", "unchecked"))
    with open(args.path, "rb") as f:
        block = memoryview(f.read(1 << 28))
    native = example_decoder._native
    import google_crc32c

    rates = {"google_crc32c_GBps": _crc_rate(lambda d: google_crc32c.value(bytes(d)), block)}
    if native is not None:
        rates["native_GBps"] = _crc_rate(native.crc32c, block)
        rates["native_slice_by_8_GBps"] = _crc_rate(lambda d: native.crc32c(d, 0, True), block)
        rates["sse42"] = native.crc32c_hardware()
    print(json.dumps({
        "file": args.path, "bytes": os.path.getsize(args.path), "rows": rows,
        "columns": len(columns), "repeats": args.repeats,
        "seconds_checked": round(checked, 3), "seconds_unchecked": round(unchecked, 3),
        "all_checked": [round(t, 3) for t in times["checked"]],
        "all_unchecked": [round(t, 3) for t in times["unchecked"]],
        "payload_crc_overhead_pct": round(100 * (checked / unchecked - 1), 2),
        **{k: (round(v, 2) if isinstance(v, float) else v) for k, v in rates.items()},
    }, indent=1))


if __name__ == "__main__":
    main()

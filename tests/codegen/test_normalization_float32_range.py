"""A z_score feature whose variance is beyond float32 (but within float64) is refused by
``beam-prep generate`` with one line naming the feature and the fix; it used to render a
module whose ``build_preprocessor`` died on "Can't convert Python sequence with a value out
of range for a double-precision float"."""

from __future__ import annotations

import pytest
from beam_prep.pipelines import analyze

from beam_prep import Artifacts
from beam_prep.codegen.render import render_module
from beam_prep.errors import ArtifactError


@pytest.mark.parametrize("values", [(3e38, -3e38, 1.0), (1e200, 1e200)])
def test_moments_beyond_float32_are_refused_clearly(tmp_path, values):
    data = tmp_path / "t.jsonl"
    data.write_text("".join(f'{{"x": {v!r}}}\n' for v in values))
    spec = tmp_path / "s.yaml"
    spec.write_text("features:\n  - {name: x, kind: numeric}\n")
    analyze.run(["--spec", str(spec), "--input", str(data), "--output", str(tmp_path / "o")])
    stats = Artifacts(str(tmp_path / "o")).stats("x")
    assert max(abs(stats["mean"]), stats["variance"]) > 3.4028234663852886e38  # numpy-free
    with pytest.raises(ArtifactError, match=r"'x'.*float32.*scaling: none"):
        render_module(Artifacts(str(tmp_path / "o")))

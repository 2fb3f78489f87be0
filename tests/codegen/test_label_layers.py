"""Generated layers over a label-aware vocabulary: a token's index is its rank by score.

Oracle: the from-scratch MI of tests/analyzers/test_label_vocab.py on the raw columns; the
runtime twin (``layers_from_artifacts``) and the rendered module must map each token to
``num_oov_indices + its rank`` (score descending, ties by bytes descending), unseen to OOV.
"""

from __future__ import annotations

import numpy as np

import beam_prep
from beam_prep.codegen.render import render_module
from tests.analyzers.test_label_vocab import oracle
from tests.codegen.conftest import import_module_from
from tests.label_artifacts import make_labeled_dir


def test_lookup_indices_follow_the_mutual_information_order(tmp_path):
    path, cols = make_labeled_dir(str(tmp_path / "art"))
    want = oracle(cols["city"], cols["clicked"], min_diff=0)
    ranked = sorted(want, key=lambda k: (-want[k], [-b for b in k.encode()]))
    assert ranked != sorted(want, key=lambda k: -cols["city"].count(k))  # not the count order
    tokens = [*ranked, "never-seen"]
    expected = [1 + k for k in range(len(ranked))] + [0]  # one OOV slot at index 0
    twin = beam_prep.layers_from_artifacts(path)
    out = twin.build_preprocessor()({"city": np.array([[t] for t in tokens], dtype=object)})
    assert np.asarray(out["city"]).reshape(-1).tolist() == expected
    module_path = tmp_path / "pp.py"
    source = render_module(beam_prep.Artifacts(path), default_artifacts_dir=path)
    module_path.write_text(source, encoding="utf-8")
    generated = import_module_from(str(module_path), "pp_labels")
    out = generated.build_preprocessor()({"city": np.array([[t] for t in tokens],
                                                           dtype=object)})
    assert np.asarray(out["city"]).reshape(-1).tolist() == expected

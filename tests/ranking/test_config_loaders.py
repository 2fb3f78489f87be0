"""Training config, ELWC options and feature_spec.json: loaded by the shared config mechanism.

Messages are written out by hand: section, field, value and what is allowed.
"""

from __future__ import annotations

import json

import pytest

from beam_prep.errors import SpecError
from beam_prep.ranking.data.options import ElwcOptions
from beam_prep.ranking.feature_spec import ElwcFeatureSpec, FeatureInfo, LabelInfo
from beam_prep.ranking.train.hparams import RankingHparams

CONFIG = """\
data:
  feature_spec: f.json
  train_pattern: t
  list_size: 8
  train_batch_size: 4
training:
  model_dir: /tmp/m
"""


def test_training_config_defaults_and_sections():
    hp = RankingHparams.from_yaml_text(CONFIG + "model:\n")
    assert hp.model.hidden_sizes == (64, 32) and hp.distribution.strategy == "default"
    assert hp.training.learning_rate == 0.001 and hp.data.valid_pattern is None


def test_training_config_duplicate_key_names_key_and_lines():
    with pytest.raises(SpecError) as e:
        RankingHparams.from_yaml_text(CONFIG + "  epochs: 2\n  epochs: 3\n")
    assert str(e.value) == ("The training config: key `epochs` appears twice in one mapping "
                            "(line 8 and line 9). Received: epochs=2 and epochs=3; keep one "
                            "of them.")
    with pytest.raises(SpecError, match=r"key `training` appears twice .*line 6 and line 8"):
        RankingHparams.from_yaml_text(CONFIG + "training:\n  model_dir: /tmp/n\n")


@pytest.mark.parametrize("extra, overrides, message", [
    ("  epoch: 3\n", (),
     "`training`: `epoch` must be one of the known keys ['model_dir', 'loss', "
     "'softmax_targets', 'optimizer', 'learning_rate', 'lr_schedule', 'ema_momentum', "
     "'warmup_steps', "
     "'warmup_epochs', 'min_learning_rate', 'plateau_factor', 'plateau_patience', 'epochs', "
     "'steps_per_epoch', "
     "'validation_steps', 'steps_per_execution', 'metrics_k', 'checkpoint_every_steps', "
     "'early_stopping_metric', 'early_stopping_patience', 'export_dir', 'loop', 'seed', "
     "'retrain'] "
     "(did you mean `epochs`?). Received: epoch=3"),
    ("", ("training.learning_rate=.inf",),
     "`training`: `learning_rate` must be a number > 0.0 and finite. Received: "
     "learning_rate=inf"),
    ("", ("model.hidden_sizes=16",),
     "`model`: `hidden_sizes` must be a list of integers. Received: hidden_sizes=16"),
    ("", ("data.drop_remainder=maybe",),
     "`data`: `drop_remainder` must be true or false. Received: drop_remainder='maybe'"),
    ("", ("modle.dropout=0.1",),
     "Override 'modle.dropout=0.1': `modle` must be one of the known keys ['data', 'model', "
     "'training', 'distribution'] (did you mean `model`?). Received: "
     "modle={'dropout': '0.1'}"),
    ("distributon:\n  strategy: tpu\n", (),
     "`distributon` must be one of the known keys ['data', 'training', 'model', "
     "'distribution'] (did you mean `distribution`?). Received: distributon={'strategy': "
     "'tpu'}"),
])
def test_training_config_errors(extra, overrides, message):
    with pytest.raises(SpecError) as e:
        RankingHparams.from_yaml_text(CONFIG + extra, overrides=overrides)
    assert str(e.value) == message


def test_training_config_missing_section():
    with pytest.raises(SpecError, match=r"^`training` must be given \(a mapping "
                                        r"\(TrainHparams\)\)"):
        RankingHparams.from_dict({"data": {"feature_spec": "f", "train_pattern": "t",
                                           "list_size": 1, "train_batch_size": 1}})


def test_elwc_options_from_dict_round_trip_and_errors():
    opts = ElwcOptions.from_dict({"input_format": "csv", "splits": [["a", 0.25], ["b", 0.75]],
                                  "context_columns": ["q"], "feature_names": [[1, "x"]]})
    assert opts.splits == (("a", 0.25), ("b", 0.75))
    assert opts.feature_names == ((1, "x"),) and opts.context_columns == ("q",)
    assert ElwcOptions.from_dict(opts.to_dict()) == opts
    with pytest.raises(SpecError) as e:
        ElwcOptions.from_dict({"list_polcy": "split"})
    assert "`list_polcy` must be one of the known keys" in str(e.value)
    assert "(did you mean `list_policy`?). Received: list_polcy='split'" in str(e.value)


@pytest.mark.parametrize("kwargs, message", [
    ({"input_format": "xml"}, "`input_format` must be one of 'letor', 'lightgbm', 'csv', "
                              "'jsonl', 'parquet'. Received: input_format='xml'"),
    ({"compression": "zip"}, "`compression` must be one of 'none', 'gzip' (did you mean "
                             "'gzip'?). Received: compression='zip'"),
    ({"num_shards": "3"}, "`num_shards` must be an integer or null. Received: num_shards='3'"),
    ({"max_list_size": 0}, "`max_list_size` must be a positive integer or None. "
                           "Received: max_list_size=0"),
])
def test_elwc_options_validate_at_construction(kwargs, message):
    with pytest.raises(SpecError) as e:
        ElwcOptions(**kwargs)
    assert str(e.value) == message


def test_feature_spec_json_round_trip_keeps_types():
    spec = ElwcFeatureSpec(context=(FeatureInfo("q", "string", (None,)),),
                           example=(FeatureInfo("x", "float", (), 0.5),
                                    FeatureInfo("n", "int64", (2,), 0)),
                           label=LabelInfo("rel", "int64", -1.0))
    back = ElwcFeatureSpec.from_json(spec.to_json())
    assert back == spec
    assert isinstance(back.example[1].default, int) and back.example[1].shape == (2,)


@pytest.mark.parametrize("change, message", [
    (lambda d: d["example"][0].update(dflt=1),
     "Feature 'x': `dflt` must be one of the known keys ['name', 'dtype', 'shape', "
     "'default'] (did you mean `default`?). Received: dflt=1"),
    (lambda d: d["example"][0].update(dtype="double"),
     "Feature 'x': `dtype` must be one of 'float', 'int64', 'string'. Received: "
     "dtype='double'"),
    (lambda d: d["label"].update(dtype="string"),
     "`label`: `dtype` must be one of 'float', 'int64'. Received: dtype='string'"),
    (lambda d: d.update(exmaple=[]),
     "feature_spec.json: `exmaple` must be one of the known keys ['format', 'version', "
     "'context', 'example', 'label', 'encoded'] (did you mean `example`?). Received: exmaple=[]"),
    (lambda d: d["example"][0].update(shape=[2, 3]),
     "Feature 'x': `shape` must be [] (scalar), [k] with k >= 1 (fixed length) or [null] "
     "(variable length). Received: shape=[2, 3]"),
])
def test_feature_spec_json_errors(change, message):
    d = json.loads(ElwcFeatureSpec(context=(), example=(FeatureInfo("x", "float", (), 0.0),),
                                   label=LabelInfo()).to_json())
    change(d)
    with pytest.raises(SpecError) as e:
        ElwcFeatureSpec.from_dict(d)
    assert str(e.value) == message

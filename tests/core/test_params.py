"""params.yaml validation: the shipped file passes; bad keys and values are named."""

import dataclasses
from pathlib import Path
from typing import Literal, get_args, get_origin

import pytest
import yaml

from paracl.core.params import ParamsError, RunSettings, Section, param, validate
from paracl.schema import load_params, schema_fields, schema_keys, validate_all
from paracl.stages.train_contrastive import method_settings

REPO = Path(__file__).resolve().parents[2]


def shipped() -> dict:
    return yaml.safe_load((REPO / "params.yaml").read_text())


def test_shipped_params_are_valid():
    params = load_params(REPO / "params.yaml")
    assert params["lang"] in ("en", "ja")
    assert 0 <= params["theta"] <= 1


def test_run_settings_are_the_typed_run_wide_keys_declared_once():
    """A stage function takes RunSettings beside its section; every stage's Params inherits
    its fields, so they stay top-level keys (and rows of the configuration reference)."""
    params = load_params(REPO / "params.yaml")
    run = RunSettings.of(params)
    assert isinstance(run.seed, int) and run.lang in ("en", "ja")
    assert (run.device, run.precision) == (params["device"], params["precision"])
    own = {f.name: f for f in dataclasses.fields(RunSettings)}
    assert list(own) == ["seed", "lang", "device", "precision"]
    top = {f.name: f for f in schema_fields()}
    assert all((top[n].type, top[n].metadata) == (f.type, f.metadata) for n, f in own.items())
    assert top["seed"].metadata["help"] and top["precision"].metadata["help"]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"theta": 1.7}, "'theta' must be int or float in [0.0, 1.0], got 1.7"),
        ({"lang": "de"}, "'lang' must be one of 'en', 'ja'"),
        ({"seed": "forty"}, "'seed' must be int"),
        ({"seed": True}, "'seed' must be int"),
        ({"thetta": 0.4}, "unknown key 'thetta'"),
    ],
)
def test_bad_top_level_values_are_named(change, message):
    values = shipped() | change
    with pytest.raises(ParamsError) as err:
        validate_all(values)
    assert message in str(err.value)


def test_nested_unknown_and_missing_keys_name_the_full_path():
    values = shipped()
    values["prepare_corpus"]["max_wrods"] = 3
    with pytest.raises(ParamsError, match=r"unknown key 'prepare_corpus.max_wrods'"):
        validate_all(values)
    values = shipped()
    del values["prepare_corpus"]["workers"]
    with pytest.raises(ParamsError, match=r"missing key 'prepare_corpus.workers'"):
        validate_all(values)


class Demo(Section):
    """A section declared as a newcomer would: one field per key."""

    xs: list[int] = param(min=0)
    d: str = "x"
    rate: float = param(0.5, min=0.0, max=1.0)
    per_lang: dict[Literal["en", "ja"], int] = param(min=1)
    n: int | None = None


def test_list_items_and_defaults():
    lang = {"per_lang": {"en": 1, "ja": 2}}
    assert validate({"xs": [1, 2], **lang}, Demo) == {
        "xs": [1, 2],
        "d": "x",
        "rate": 0.5,
        "per_lang": {"en": 1, "ja": 2},
        "n": None,
    }
    with pytest.raises(ParamsError, match=r"'xs\[1\]' must be int >= 0, got -1"):
        validate({"xs": [1, -1], **lang}, Demo)
    with pytest.raises(ParamsError, match=r"'xs' must be list, got 3"):
        validate({"xs": 3, **lang}, Demo)
    assert validate({"xs": [], "rate": 1, **lang}, Demo)["rate"] == 1  # an int where a float is
    with pytest.raises(ParamsError, match=r"'rate' must be int or float in \[0.0, 1.0\], got True"):
        validate({"xs": [], "rate": True, **lang}, Demo)
    with pytest.raises(ParamsError, match=r"'n' must be int \(or null\), got 'a'"):
        validate({"xs": [], "n": "a", **lang}, Demo)
    with pytest.raises(ParamsError, match=r"'d' must be str, got null"):
        validate({"xs": [], "d": None, **lang}, Demo)


def test_per_language_maps_need_exactly_their_keys():
    with pytest.raises(ParamsError, match=r"missing key 'per_lang.ja'"):
        validate({"xs": [], "per_lang": {"en": 1}}, Demo)
    with pytest.raises(ParamsError, match=r"unknown key 'per_lang.de' \(known here: en, ja\)"):
        validate({"xs": [], "per_lang": {"en": 1, "ja": 1, "de": 1}}, Demo)
    with pytest.raises(ParamsError, match=r"'per_lang.ja' must be int >= 1, got 0"):
        validate({"xs": [], "per_lang": {"en": 1, "ja": 0}}, Demo)
    with pytest.raises(ParamsError, match=r"'per_lang' must be a section \(a mapping\), got 5"):
        validate({"xs": [], "per_lang": 5}, Demo)


def test_schema_subset_checks_some_sections_alone():
    keys = ("seed", "lang", "summary")
    raw = shipped()
    assert validate({k: raw[k] for k in keys}, {k: schema_keys()[k] for k in keys}) == {
        k: raw[k] for k in keys
    }


def test_new_keys_are_required_and_checked():
    values = shipped()
    values["generate_paraphrases"].pop("heatmap_min_words")
    with pytest.raises(ParamsError, match=r"missing key 'generate_paraphrases.heatmap_min_words'"):
        validate_all(values)
    values["generate_paraphrases"]["heatmap_min_words"] = -1
    with pytest.raises(ParamsError, match=r"'generate_paraphrases.heatmap_min_words' must be"):
        validate_all(values)
    for gone in ("jcse", "jcse_two_stage", "ams", "ebsim"):
        values = shipped()
        values["train_contrastive"][gone] = {"alpha": 1.0}
        with pytest.raises(ParamsError, match=f"unknown key 'train_contrastive.{gone}'"):
            validate_all(values)
    values = shipped()
    values["evaluate"]["methods"] = ["none"]
    with pytest.raises(ParamsError, match=r"unknown key 'evaluate.methods'"):
        validate_all(values)


def test_max_examples_per_method_makes_a_learning_curve():
    """One method at several training lengths in one preset: its own max_examples."""
    entry = {"loss": "infonce", "input": "p", "max_examples": 512}
    assert method_settings("simcse_16", entry) == {"max_examples": 512}
    assert method_settings("simcse_all", entry | {"max_examples": None}) == {"max_examples": None}
    with pytest.raises(ParamsError, match=r"methods\.simcse_1\.max_examples' must be"):
        method_settings("simcse_1", entry | {"max_examples": 1})


def test_train_layers_shared_and_per_method():
    values = shipped()
    assert validate_all(values)["train_contrastive"]["train_layers"] is None  # all layers
    values["train_contrastive"]["train_layers"] = 4
    entry = {"loss": "infonce", "input": "p", "train_layers": 2}
    values["train_contrastive"]["methods"] = {"top2": entry}
    checked = validate_all(values)["train_contrastive"]
    assert checked["train_layers"] == 4 and method_settings("top2", entry) == {"train_layers": 2}
    with pytest.raises(ParamsError, match=r"methods\.top2\.train_layers' must be int >= 1"):
        method_settings("top2", entry | {"train_layers": 0})
    values["train_contrastive"]["train_layers"] = 0
    with pytest.raises(ParamsError, match=r"'train_contrastive\.train_layers' must be int >= 1"):
        validate_all(values)


def with_methods(methods) -> dict:
    values = shipped()
    values["train_contrastive"]["methods"] = methods
    return values


def test_method_entries_keep_their_own_params():
    methods = {
        "ppdb": {"loss": "infonce", "input": "data/ppdb/pairs.parquet"},
        "ams_2": {"input": "p", "loss": "ams", "seeds": [3], "margin": 0.3, "threshold": None},
    }
    checked = validate_all(with_methods(methods))["train_contrastive"]["methods"]
    assert checked["ppdb"] == {
        "input": "data/ppdb/pairs.parquet",
        "loss": "infonce",
        "data": None,
        "seeds": None,
        "tags": None,
        "task": None,
    }
    assert checked["ams_2"] == {
        "input": "p",
        "loss": "ams",
        "data": None,
        "seeds": [3],
        "tags": None,
        "task": None,
        "margin": 0.3,
        "threshold": None,
    }
    assert validate_all(with_methods({}))["train_contrastive"]["methods"] == {}


@pytest.mark.parametrize(
    "methods, message",
    [
        (
            {"ppdb": "data/x.parquet"},
            "'train_contrastive.methods.ppdb' must be a section (a mapping), got 'data/x.parquet'",
        ),
        ({"ppdb": {"input": "x"}}, "missing key 'train_contrastive.methods.ppdb.loss'"),
        ({"ppdb": {"loss": "infonce"}}, "missing key 'train_contrastive.methods.ppdb.input'"),
        (
            {"ppdb": {"loss": "infonce", "input": 3}},
            "'train_contrastive.methods.ppdb.input' must be str, got 3",
        ),
        (
            {"ppdb": {"loss": "infonce", "input": "x", "seeds": [-1]}},
            "'train_contrastive.methods.ppdb.seeds[0]' must be int >= 0, got -1",
        ),
        (
            {"ppdb": {"loss": "infonce", "input": "x", "seeds": True}},
            "'train_contrastive.methods.ppdb.seeds' must be list (or null), got True",
        ),
        ({"a-b": {"loss": "none", "input": "x"}}, "'train_contrastive.methods': bad name 'a-b'"),
        ({"": {"loss": "none", "input": "x"}}, "'train_contrastive.methods': bad name ''"),
        ({1: {"loss": "none", "input": "x"}}, "'train_contrastive.methods': bad name 1"),
        (["ppdb"], "'train_contrastive.methods' must be a section (a mapping), got ['ppdb']"),
        (None, "'train_contrastive.methods' must be a section (a mapping), got None"),
    ],
)
def test_bad_method_entries_are_named(methods, message):
    with pytest.raises(ParamsError) as err:
        validate_all(with_methods(methods))
    assert message in str(err.value)


def test_load_params_names_the_file(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("seed: 1\nlang: en\ntheta: [\n")
    with pytest.raises(ParamsError, match=r"params.yaml:4:1: not valid YAML: while parsing") as err:
        load_params(path)
    assert "\n" not in str(err.value)  # one line: the stage prints it as its last line
    with pytest.raises(ParamsError, match="file not found"):
        load_params(tmp_path / "nope.yaml")
    path.write_text("")
    with pytest.raises(ParamsError, match="params.yaml: the file is empty"):
        load_params(path)
    path.write_bytes(b"PAR1\x00\x15\x04")  # not YAML: binary
    with pytest.raises(ParamsError, match="params.yaml: not valid YAML: .*#x0000"):
        load_params(path)
    path.write_bytes(b"seed: \xff\n")
    with pytest.raises(ParamsError, match=r"params.yaml: not UTF-8 text \(byte 6\)"):
        load_params(path)


def test_an_ebsim_input_is_a_ranking_that_ebsim_retrieve_writes():
    """An ebsim method's input must be data/ebsim/<corpus>.parquet of a corpus named in
    ebsim_retrieve.corpora: else no stage writes it and DVC would fail later, less clearly."""
    from paracl.schema import check_all, with_runs

    entry = {"loss": "ebsim", "input": "data/ebsim/sentences.parquet"}
    values = with_runs(validate_all(with_methods({"ebsim": entry})))
    with pytest.raises(ParamsError, match=r"'train_contrastive.methods.ebsim.input': .*is no "
                       r"ranking .*\(it writes: none: ebsim_retrieve.corpora is empty\)"):  # fmt: skip
        check_all(values)
    values["ebsim_retrieve"]["corpora"] = {"sentences": "data/corpus/sentences.parquet"}
    check_all(values)
    values["train_contrastive"]["methods"]["ebsim"]["input"] = "data/corpus/sentences.parquet"
    with pytest.raises(ParamsError, match=r"it writes: data/ebsim/sentences.parquet\)"):
        check_all(values)


# corrupt's fields are the corrupt/filler change's to edit: its defaults go when it lands
PENDING: set[str] = set()  # keys whose second default is yet to go


def _second_defaults(section: type | list, values: dict, prefix: str = "") -> list[str]:
    """The keys whose field carries a default though params.yaml writes the value: a
    section's key that params.yaml sets, or an entry's key (`<name>`) that every entry sets.
    `section`: a Section, or the whole file's fields (paracl.schema.schema_fields)."""
    found = []
    for f in section if isinstance(section, list) else dataclasses.fields(section):
        key, given = prefix + f.name, values.get(f.name)
        if f.default is not dataclasses.MISSING and f.name in values:
            found.append(key)
        entry = get_args(f.type)[1] if get_origin(f.type) is dict else None
        if dataclasses.is_dataclass(f.type):
            found += _second_defaults(f.type, given, key + ".")
        elif dataclasses.is_dataclass(entry) and given:
            found += [f"{key}.<name>.{e.name}" for e in dataclasses.fields(entry)
                      if e.default is not dataclasses.MISSING
                      and all(e.name in v for v in given.values())]  # fmt: skip
    return found


def test_each_value_is_written_once_in_params_yaml():
    """params.yaml holds the values; the schema only types, ranges and help: a default there
    would be a second copy that drifts (train_paraphraser.min_train_pairs said 1, params.yaml
    16). A default is only for an entry's key that some entry leaves out."""
    assert set(_second_defaults(schema_fields(), shipped())) == PENDING
    assert _second_defaults(Demo, {"d": "y", "n": 1, "xs": []}) == ["d", "n"]  # the check works
    values = shipped()
    del values["evaluate"]["finetune_head"]  # a key that had a schema default
    with pytest.raises(ParamsError, match=r"missing key 'evaluate.finetune_head'"):
        validate_all(values)

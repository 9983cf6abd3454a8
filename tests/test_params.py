"""params.yaml validation: the shipped file passes; bad keys and values are named."""

from pathlib import Path

import pytest
import yaml

from paracl.params import Param, ParamsError, load_params, validate

REPO = Path(__file__).resolve().parents[1]


def shipped() -> dict:
    return yaml.safe_load((REPO / "params.yaml").read_text())


def test_shipped_params_are_valid():
    params = load_params(REPO / "params.yaml")
    assert params["lang"] in ("en", "ja")
    assert 0 <= params["theta"] <= 1


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
        validate(values)
    assert message in str(err.value)


def test_nested_unknown_and_missing_keys_name_the_full_path():
    values = shipped()
    values["prepare_corpus"]["max_wrods"] = 3
    with pytest.raises(ParamsError, match=r"unknown key 'prepare_corpus.max_wrods'"):
        validate(values)
    values = shipped()
    del values["prepare_corpus"]["workers"]
    with pytest.raises(ParamsError, match=r"missing key 'prepare_corpus.workers'"):
        validate(values)


def test_list_items_and_defaults():
    schema = {"xs": Param(list, item=Param(int, min=0)), "d": Param(str, default="x")}
    assert validate({"xs": [1, 2]}, schema) == {"xs": [1, 2], "d": "x"}
    with pytest.raises(ParamsError, match=r"'xs\[1\]' must be int >= 0, got -1"):
        validate({"xs": [1, -1]}, schema)


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

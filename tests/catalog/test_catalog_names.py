"""The catalog's name and inline-override grammar."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jurist.catalog import format_overrides, parse_name, parse_overrides
from jurist.catalog._names import check_name, name_to_relpath
from jurist.errors import ConfigError


def test_plain_name_and_its_file() -> None:
    assert parse_name("judges.mt_bench.hf_qwen2_5_0_5b_instruct") == (
        "judges.mt_bench.hf_qwen2_5_0_5b_instruct",
        {},
    )
    assert str(name_to_relpath("judges.a.b")) == "judges/a/b.yaml"
    assert parse_name("  templates.t[]  ") == ("templates.t", {})


def test_value_types() -> None:
    _, over = parse_name(
        "judges.x[a=1,b=-2,c=0.25,d=1e-3,e=.5,f=true,g=FALSE,h=null,i=None,j=hello world,"
        "k='1',l=\"true\",m='a,b]=c',n='it\\'s',o='',p= padded ]"
    )
    assert over == {
        "a": 1,
        "b": -2,
        "c": 0.25,
        "d": 0.001,
        "e": 0.5,
        "f": True,
        "g": False,
        "h": None,
        "i": None,
        "j": "hello world",
        "k": "1",
        "l": "true",
        "m": "a,b]=c",
        "n": "it's",
        "o": "",
        "p": "padded",
    }
    assert isinstance(over["a"], int) and isinstance(over["c"], float)


def test_dotted_keys() -> None:
    _, over = parse_name("judges.x[model_options.base_url='http://127.0.0.1:1/v1']")
    assert over == {"model_options.base_url": "http://127.0.0.1:1/v1"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("judges.x[temperature=0.2", "not closed with ']'"),
        ("judges.x]", "']' without '['"),
        ("judges.x[temperature]", "'temperature' at column 1 has no '=value'"),
        ("judges.x[temperature=]", "'temperature' has an empty value"),
        ("judges.x[a=1,a=2]", "key 'a' is given twice"),
        ("judges.x[1a=1]", "'1a' at column 1 is not a key"),
        ("judges.x[a=b=c]", "the value of 'a' holds '=' at column 4; quote it"),
        ("judges.x[a='open]", "opens a quote ' at column 3 that is never closed"),
        ("judges.x[a='x'y]", "unexpected 'y' at column 6 after the value of 'a'"),
        ("judges.x[a=1,]", "a trailing ','"),
        ("judges.x[a=[1,2]]", "the value of 'a' holds '['"),
        ("judges", "two or more dotted parts"),
        ("models.x", "the first part must be one of judges, templates, rubrics"),
        ("judges.2x", "two or more dotted parts"),
    ],
)
def test_errors_point_at_the_bad_part(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_name(text)
    assert message in str(e.value)
    if "[" in text:
        assert repr(text) in str(e.value)


def test_check_name_accepts_every_section() -> None:
    for name in ("judges.a", "templates.b_1", "rubrics.c.d"):
        assert check_name(name) == name


_keys = st.from_regex(r"[a-z_][a-z0-9_]{0,6}(\.[a-z_][a-z0-9_]{0,6})?", fullmatch=True)
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**9), max_value=10**9),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12),
)


@given(st.dictionaries(_keys, _values, max_size=5))
def test_format_then_parse_round_trips(overrides: dict[str, object]) -> None:
    text = format_overrides(overrides)
    assert parse_overrides(text[1:-1] if text else "") == overrides
    name, back = parse_name("judges.x" + text)
    assert (name, back) == ("judges.x", overrides)


def test_format_refuses_what_it_cannot_write() -> None:
    with pytest.raises(ConfigError, match="finite"):
        format_overrides({"a": float("inf")})
    with pytest.raises(ConfigError, match="only strings, numbers"):
        format_overrides({"a": [1, 2]})

"""advisor/fileio/yaml_text.py: what it writes reads back, by PyYAML, as what it was given."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.fileio.yaml_text import dump

yaml = pytest.importorskip("yaml")

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                    st.text())
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(), inner, max_size=4)), max_leaves=20)


@settings(deadline=None)
@given(value=st.dictionaries(st.text(), values, max_size=5))
def test_it_reads_back_as_it_was(value):
    assert yaml.safe_load(dump(value)) == (value or {})


def test_words_yaml_would_read_as_other_types_stay_strings():
    value = {"on": "off", "null": "1e3", "a/b.c-d": ["yes", "~", "--flag=1", "$((X*8))"]}
    assert yaml.safe_load(dump(value)) == value

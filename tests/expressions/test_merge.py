"""The 0.8 merge rules, one case each, plus properties over random JSON."""

from hypothesis import given, strategies as st

from xflow_runtime.expressions import merge, merge_at_path


def test_spec_example_deep_object_merge_keeps_target_keys():
    target = {"customer": {"name": "John", "address": "1234 street", "zip": "12345"}}
    source = {"customer": {"name": "John", "zip": "54321"}}
    assert merge(target, source) == {"customer": {"name": "John", "address": "1234 street", "zip": "54321"}}


def test_spec_example_arrays_concatenate_without_duplicates():
    assert merge({"c": ["Michael"]}, {"c": ["John", "Jane", "Michael"]}) == {"c": ["Michael", "John", "Jane"]}


def test_spec_example_numbers_overwrite():
    assert merge({"age": 30}, {"age": 31}) == {"age": 31}


def test_null_target_takes_the_source_and_scalars_append_to_arrays():
    assert merge(None, [1]) == [1]
    assert merge(["Order Submitted"], "Order Picked up") == ["Order Submitted", "Order Picked up"]
    assert merge(["a"], "a") == ["a"]


def test_array_replaces_non_array_target():
    assert merge({"a": 1}, [1]) == [1]


def test_merge_at_path_creates_missing_parents():
    assert merge_at_path({}, ["a", "b"], {"x": 1}) == {"a": {"b": {"x": 1}}}
    assert merge_at_path({"a": {"b": {"y": 2}}}, ["a", "b"], {"x": 1}) == {"a": {"b": {"y": 2, "x": 1}}}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=2), children, max_size=3),
    max_leaves=10,
)


@given(json_values, json_values)
def test_merge_never_mutates_its_inputs(a, b):
    import copy
    a0, b0 = copy.deepcopy(a), copy.deepcopy(b)
    merge(a, b)
    assert a == a0 and b == b0


@given(st.dictionaries(st.text(max_size=2), json_values, max_size=4), st.dictionaries(st.text(max_size=2), json_values, max_size=4))
def test_object_merge_keeps_every_key_of_both_sides(a, b):
    assert set(merge(a, b)) == set(a) | set(b)

"""The differential tests each compiled function's test file runs on its
cases, made once here."""
import pytest

from chainer_fastpath.testing.differential import (
    FLOAT_DTYPES, check_error_after_passing, check_gradients_same,
    check_outputs_same, check_second_order_same)


def function_tests(apply_cases, backward_cases, second_order,
                   compiled_backward=True, type_check_sequences=None,
                   compiled_forward=None):
    """Test functions, by name, for a test module's globals:

    - ``test_outputs_same_as_stock``: every case of ``apply_cases``
      (name -> builds ``(fn, args)``), with and without backprop and
      ``type_check``;
    - ``test_gradients_same_as_stock``: every case of ``backward_cases``
      (name -> f(dtype) returning ``(inputs, output)``), every float dtype,
      with and without ``type_check``;
    - ``test_double_backprop_same_as_stock``: the backward cases named in
      ``second_order``, every float dtype (not made where none is named:
      an old-style Function's gradients have no graph);
    - ``test_compiled_backward_is_used``: every backward case takes a
      compiled backward and leaves nothing to stock (only where
      ``compiled_backward``: for a function whose forward alone is
      compiled, it is not made; a list of names restricts it to those
      cases, where the others are left to stock by design);
    - ``test_error_after_a_cached_pass_is_stocks``: for each of
      ``type_check_sequences`` (name -> ``(first, second)``, a call whose
      type check passes and one that stock rejects), the second raises
      stock's error after the first's pass was cached (only where given);
    - ``test_forward_is_compiled``: for each of ``compiled_forward``
      (apply case name -> the stock function its compiled forward stands
      for), that function runs stock and never patched (only where given).
    """
    @pytest.mark.parametrize('type_check', [True, False])
    @pytest.mark.parametrize('backprop', [True, False])
    @pytest.mark.parametrize('case', sorted(apply_cases))
    def test_outputs_same_as_stock(case, backprop, type_check):
        check_outputs_same(apply_cases[case], backprop, type_check)

    @pytest.mark.parametrize('dtype', FLOAT_DTYPES)
    @pytest.mark.parametrize('case', sorted(backward_cases))
    @pytest.mark.parametrize('type_check', [True, False])
    def test_gradients_same_as_stock(case, dtype, type_check):
        check_gradients_same(backward_cases[case], dtype, type_check)

    @pytest.mark.parametrize('dtype', FLOAT_DTYPES)
    @pytest.mark.parametrize('case', list(second_order))
    def test_double_backprop_same_as_stock(case, dtype):
        check_second_order_same(backward_cases[case], dtype)

    compiled_cases = (sorted(backward_cases) if compiled_backward is True
                      else list(compiled_backward or ()))

    @pytest.mark.parametrize('case', compiled_cases)
    def test_compiled_backward_is_used(case, compiled_backward_is_used):
        compiled_backward_is_used(backward_cases[case])

    sequences = type_check_sequences or {}

    @pytest.mark.parametrize('name', sorted(sequences))
    def test_error_after_a_cached_pass_is_stocks(name):
        assert check_error_after_passing(*sequences[name]) is not None

    forwards = compiled_forward or {}

    @pytest.mark.parametrize('case', sorted(forwards))
    def test_forward_is_compiled(case, compiled_instead):
        fn, xs = apply_cases[case]()[:2]
        compiled_instead(lambda: fn(*xs), forwards[case])

    tests = [test_outputs_same_as_stock, test_gradients_same_as_stock]
    if second_order:
        tests.append(test_double_backprop_same_as_stock)
    if compiled_cases:
        tests.append(test_compiled_backward_is_used)
    if sequences:
        tests.append(test_error_after_a_cached_pass_is_stocks)
    if forwards:
        tests.append(test_forward_is_compiled)
    return {f.__name__: f for f in tests}

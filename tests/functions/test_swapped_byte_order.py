"""Every compiled function's gradient cases on arrays of the other byte
order: NumPy's results of them are native, so stock's nodes may reject
what they compute (a dtype mismatch) or go on; patched does the same,
with the same error or the same bits."""
import glob
import importlib
import os
import re
import warnings

import numpy
import pytest

from chainer_fastpath.testing import gradients, run_both
from chainer_fastpath.testing.differential import assert_same

_HERE = os.path.dirname(__file__)
_ADDRESS = re.compile(r'0x[0-9a-f]+')


def _cases():
    for path in sorted(glob.glob(os.path.join(_HERE, '**', 'test_*.py'),
                                 recursive=True)):
        name = os.path.relpath(path[:-3], os.path.dirname(_HERE))
        module = importlib.import_module(name.replace(os.sep, '.'))
        for case in sorted(getattr(module, 'BACKWARD_CASES', {})):
            yield pytest.param(module.BACKWARD_CASES[case],
                               id='{}:{}'.format(name.rsplit(os.sep, 1)[-1],
                                                 case))


def _outcome(build, dtype):
    def fn():
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            try:
                return gradients(build, dtype)
            except Exception as e:
                return type(e).__name__, _ADDRESS.sub('0x?', str(e))
    return fn


@pytest.mark.parametrize('dtype', ['>f4', '>f8'])
@pytest.mark.parametrize('build', list(_cases()))
def test_gradients_of_swapped_arrays_as_stock(build, dtype):
    # Little-endian machines: '>' is the swapped order.
    assert not numpy.dtype(dtype).isnative
    assert_same(*run_both(_outcome(build, numpy.dtype(dtype))))

"""docs/design/adding-a-function.md walks through relu.pyx by quoting it:
every ```cython block there is a run of the module's own lines (or, where
the page shows how another module shares through a .pxd, of that
module's)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, 'docs', 'design', 'adding-a-function.md')
SOURCES = [os.path.join(ROOT, 'chainer_fastpath', 'functions', *parts)
           for parts in (('activation', 'relu.pyx'),
                         ('array', 'stack.pyx'))]


def _blocks():
    with open(DOC, encoding='utf-8') as f:
        return re.findall(r'```cython\n(.*?)```', f.read(), re.S)


def test_every_quoted_block_is_the_code():
    texts = []
    for path in SOURCES:
        with open(path, encoding='utf-8') as f:
            texts.append(f.read())
    blocks = _blocks()
    assert len(blocks) >= 7
    for block in blocks:
        assert any(block in text for text in texts), block


def test_the_paths_it_names_exist():
    with open(DOC, encoding='utf-8') as f:
        text = f.read()
    paths = set(re.findall(
        r'`((?:chainer_fastpath/|tests/|functions/|_core/|_runtime/)'
        r'[\w/]+\.(?:pyx|pxd|py|h))`', text))
    assert paths
    for path in paths:
        if path.startswith(('functions/', '_core/', '_runtime/')):
            path = 'chainer_fastpath/' + path
        assert os.path.exists(os.path.join(ROOT, path)), path

"""The package's layers import downward only, as docs/design/layout.md
states them ("Layers: imports go downward only").

Every ``import`` and ``cimport`` of every ``.py``, ``.pyx`` and ``.pxd``
file under ``chainer_fastpath/`` is read, at any indentation (an import
inside a function counts), and each one of a ``chainer_fastpath`` module
is checked against the rules below. ``make lint`` runs this file as a
script (``python tests/test_layers.py``), ``make test`` as a test.
"""
import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = 'chainer_fastpath'

#: The replaced entry points at the package's root: what the patch table
#: installs, besides the modules of functions/ and optimizers/.
ENTRY_POINTS = frozenset(['_arith', '_fast_backward', '_fast_call',
                          '_force_array', '_link_call', '_unchain'])

#: The package's top: the public API, the patch table, the CLI and its
#: tools. It may import anything; nothing below imports it. A module at
#: the root is an entry point or one of these.
TOP = frozenset(['__main__', '_patch', '_memory', '_doctor', '_profile',
                 '_report', '_script', '_numpy_distutils', 'testing', 'bench'])

#: What each part may import, lowest part first (TOP: anything).
MAY_IMPORT = {
    '_core': ('_core',),
    '_runtime': ('_core', '_runtime'),
    'functions': ('_core', '_runtime', 'functions'),
    'optimizers': ('_core', '_runtime', 'optimizers'),
    'machinery': ('_core', '_runtime', 'machinery'),
    'links': ('_core', '_runtime', 'functions', 'links'),
    '_backward': ('_core', '_runtime', '_backward'),
    'entry points': ('_core', '_runtime'),
}

#: The one entry point that may also import _backward/, its engine.
BACKWARD_ENGINE_OF = 'chainer_fastpath._fast_backward'


def part(module):
    """The part (a key of MAY_IMPORT, 'top', or 'unknown' for a root
    module named in neither ENTRY_POINTS nor TOP) of the dotted
    ``module``."""
    parts = module.split('.')[1:]
    if not parts:
        return 'top'
    if parts[0] in ('_core', '_runtime', 'functions', 'optimizers',
                    'machinery', 'links', '_backward'):
        return parts[0]
    if parts[0] in ENTRY_POINTS:
        return 'entry points'
    if parts[0] in TOP:
        return 'top'
    return 'unknown'


def _family(module):
    # 'chainer_fastpath.functions.math.sum' -> 'math'; None for
    # functions/__init__.py (the registry list, which imports every
    # function module) and outside functions/.
    parts = module.split('.')
    if len(parts) >= 4 and parts[1] == 'functions':
        return parts[2]
    return None


def violation(importer, imported):
    """Why the module ``importer`` may not import ``imported`` (both
    dotted), or None where it may."""
    mine, theirs = part(importer), part(imported)
    for module, where in ((importer, mine), (imported, theirs)):
        if where == 'unknown':
            return '{}: a root module is an entry point or the top ' \
                '(ENTRY_POINTS, TOP)'.format(module)
    if mine == 'top':
        return None
    if theirs == '_backward' and importer == BACKWARD_ENGINE_OF:
        return None
    if theirs not in MAY_IMPORT[mine]:
        return '{} ({}) imports {} ({}); {} imports only {}'.format(
            importer, mine, imported, theirs, mine,
            ', '.join(MAY_IMPORT[mine]))
    families = _family(importer), _family(imported)
    if (theirs == 'functions' and families[0] is not None
            and families[0] != families[1]):
        return '{} imports {}, outside its family: what families share ' \
            'lives in _runtime'.format(importer, imported)
    return None


def _modules(root):
    """{dotted name: path} of every module and package under PACKAGE
    (a .pyx and its .pxd are one module, path the .pyx's)."""
    found = {}
    base = os.path.join(root, PACKAGE)
    for directory, subdirs, files in os.walk(base):
        subdirs[:] = [d for d in subdirs if d != '__pycache__']
        rel = os.path.relpath(directory, root)
        package = rel.replace(os.sep, '.')
        for name in sorted(files):
            stem, ext = os.path.splitext(name)
            if ext not in ('.py', '.pyx', '.pxd'):
                continue
            dotted = package if stem == '__init__' else package + '.' + stem
            found.setdefault(dotted, []).append(os.path.join(directory, name))
    return found


# ``from M cimport a, b`` / ``from M import (a,\n b)`` / ``cimport M`` /
# ``import M as m, N``: at the start of a line, at any indentation.
_FROM = re.compile(r'^[ \t]*from[ \t]+([\w.]+)[ \t]+c?import[ \t]+'
                   r'(\([^)]*\)|[^\n]*)', re.M)
_IMPORT = re.compile(r'^[ \t]*c?import[ \t]+([\w.]+(?:[ \t]+as[ \t]+\w+)?'
                     r'(?:[ \t]*,[ \t]*[\w.]+(?:[ \t]+as[ \t]+\w+)?)*)',
                     re.M)


def _cython_imports(text):
    """``(line, module, names)`` of the imports in Cython source; names
    is () for ``import M``."""
    out = []
    for match in _FROM.finditer(text):
        line = text.count('\n', 0, match.start()) + 1
        names = match.group(2).strip().strip('()').split('#')[0]
        names = tuple(n.split()[0] for n in names.replace('\n', ' ')
                      .split(',') if n.strip())
        out.append((line, match.group(1), names))
    for match in _IMPORT.finditer(text):
        line = text.count('\n', 0, match.start()) + 1
        for item in match.group(1).split(','):
            out.append((line, item.split()[0], ()))
    return out


def _python_imports(text, module, is_package):
    """``(line, module, names)`` of the imports in Python source, relative
    ones resolved against ``module``."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name, ()) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ''
            if node.level:
                base = module.split('.')
                if not is_package:
                    base = base[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = '.'.join(base + ([target] if target else []))
            out.append((node.lineno, target,
                        tuple(a.name for a in node.names)))
    return out


def imports(root=ROOT):
    """``(path, line, importer, imported)`` of every import of a
    PACKAGE module by a PACKAGE module."""
    modules = _modules(root)
    out = []
    for module, paths in sorted(modules.items()):
        for path in paths:
            with open(path, encoding='utf-8') as f:
                text = f.read()
            if path.endswith('.py'):
                found = _python_imports(
                    text, module, path.endswith('__init__.py'))
            else:
                found = _cython_imports(text)
            for line, target, names in found:
                if target != PACKAGE and not target.startswith(
                        PACKAGE + '.'):
                    continue
                # ``from M import n``: the module M.n where there is one.
                targets = [target + '.' + n for n in names
                           if target + '.' + n in modules] or [target]
                out.extend((path, line, module, t) for t in targets)
    return out


def violations(root=ROOT):
    """One line per import that breaks the layering, and per root module
    that is neither an entry point nor the top's."""
    out = ['{}: a root module is an entry point or the top (ENTRY_POINTS, '
           'TOP)'.format(m) for m in sorted(_modules(root))
           if part(m) == 'unknown']
    for path, line, importer, imported in imports(root):
        why = violation(importer, imported)
        if why is not None:
            out.append('{}:{}: {}'.format(
                os.path.relpath(path, root), line, why))
    return out


def test_imports_go_downward_only():
    assert violations() == []


def test_the_check_reads_the_imports():
    found = {(importer, imported)
             for _, _, importer, imported in imports()}
    # A cimport, a multi-line cimport, a from-import of a module, and an
    # import inside a function.
    assert ('chainer_fastpath.functions.activation.relu',
            'chainer_fastpath._runtime._public') in found
    assert ('chainer_fastpath._fast_call',
            'chainer_fastpath._core._objects') in found
    assert ('chainer_fastpath._fast_call',
            'chainer_fastpath._core._registry') in found
    assert ('chainer_fastpath._patch', 'chainer_fastpath._fast_call') in found


def test_the_check_finds_what_breaks_the_layering():
    core, runtime = 'chainer_fastpath._core._apply', \
        'chainer_fastpath._runtime._public'
    relu = 'chainer_fastpath.functions.activation.relu'
    assert violation(core, runtime) is not None
    assert violation(runtime, relu) is not None
    assert violation(runtime, 'chainer_fastpath._fast_call') is not None
    assert violation(relu, 'chainer_fastpath._force_array') is not None
    assert violation(relu, 'chainer_fastpath.optimizers._update') is not None
    assert violation(relu, 'chainer_fastpath.functions.math.sum') is not None
    assert violation('chainer_fastpath._arith',
                     'chainer_fastpath._fast_call') is not None
    assert violation('chainer_fastpath._fast_call',
                     'chainer_fastpath.functions.math.sum') is not None
    assert violation('chainer_fastpath._core._registry',
                     'chainer_fastpath.testing') is not None
    assert violation(relu, runtime) is None
    assert violation(relu, core) is None
    assert violation('chainer_fastpath.functions.array.stack',
                     'chainer_fastpath.functions.array.separate') is None
    assert violation('chainer_fastpath._fast_call', runtime) is None
    assert violation('chainer_fastpath._patch',
                     'chainer_fastpath._fast_call') is None
    assert violation('chainer_fastpath._fast_backward',
                     'chainer_fastpath._backward.heap') is None
    assert violation('chainer_fastpath._unchain',
                     'chainer_fastpath._backward.heap') is not None
    assert violation(relu, 'chainer_fastpath._backward.heap') is not None
    assert violation('chainer_fastpath._backward.heap', runtime) is None
    assert violation('chainer_fastpath._backward.heap',
                     'chainer_fastpath._fast_backward') is not None
    assert violation('chainer_fastpath._helpers', core) is not None
    assert violation(relu, 'chainer_fastpath._helpers') is not None


if __name__ == '__main__':
    found = violations()
    for line in found:
        print(line)
    sys.exit(1 if found else 0)

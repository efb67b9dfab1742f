"""One patch-table module made of several, for the packages whose modules
each speak the patch protocol (``TARGETS``, ``bind``)."""
import importlib


def gathered(modules):
    """``(TARGETS, bind)`` of ``modules`` together: every module's targets
    in their order, and a ``bind`` that hands each target to the module
    that replaces it."""
    module_of = {target: module for module in modules
                 for target in module.TARGETS}

    def bind(owner, attribute, original):
        """The replacement of ``original``, from the module that compiles
        it."""
        return module_of[owner, attribute].bind(owner, attribute, original)
    return tuple(module_of), bind


def submodules(package, names):
    """The modules ``package.name`` for each of ``names``, imported."""
    return [importlib.import_module(package + '.' + name) for name in names]

"""Nested structures of values (tuples, lists, dicts, namedtuples), as TensorFlow's ``nest``.

A structure's leaves are everything that is not a tuple, list or dict. Dict items are taken in
sorted key order, as TF does, so a structure flattens the same way wherever it was built.
"""


def is_sequence(x):
    return isinstance(x, (tuple, list, dict))


def _children(x):
    if isinstance(x, dict):
        return [x[k] for k in sorted(x)]
    return list(x)


def flatten(structure):
    """The leaves of structure, depth first; a leaf alone gives [leaf]."""
    if not is_sequence(structure):
        return [structure]
    out = []
    for child in _children(structure):
        out.extend(flatten(child))
    return out


def _rebuild(template, children):
    if isinstance(template, dict):
        return type(template)((k, v) for k, v in zip(sorted(template), children))
    if isinstance(template, tuple) and hasattr(template, "_fields"):
        return type(template)(*children)
    return type(template)(children)


def pack_sequence_as(structure, flat):
    """flat's items arranged as structure's leaves; ValueError if the counts differ."""
    flat = list(flat)
    n = len(flatten(structure))
    if len(flat) != n:
        raise ValueError(f"Could not pack sequence. Structure had {n} elements, but flat_sequence had "
                         f"{len(flat)} elements.")
    it = iter(flat)

    def pack(s):
        if not is_sequence(s):
            return next(it)
        return _rebuild(s, [pack(c) for c in _children(s)])

    return pack(structure)


def assert_same_structure(a, b, check_types=True, expand_composites=False):
    """ValueError (TypeError for different sequence types, with check_types) if a and b are not
    nested alike. expand_composites: TF's argument; pygrad's structures hold no composite tensors."""
    if is_sequence(a) != is_sequence(b):
        raise ValueError(f"The two structures don't have the same nested structure: {a!r} and {b!r}")
    if not is_sequence(a):
        return
    if check_types and type(a) is not type(b) and not (isinstance(a, list) and isinstance(b, list)):
        raise TypeError(f"The two structures don't have the same sequence type: {type(a).__name__} and "
                        f"{type(b).__name__}")
    if isinstance(a, dict) and sorted(a) != sorted(b):
        raise ValueError(f"The two dictionaries don't have the same set of keys: {sorted(a)} and {sorted(b)}")
    ca, cb = _children(a), _children(b)
    if len(ca) != len(cb):
        raise ValueError(f"The two structures don't have the same number of elements: {len(ca)} and {len(cb)}")
    for x, y in zip(ca, cb):
        assert_same_structure(x, y, check_types)


def map_structure(fn, *structures):
    """fn applied to the leaves of structures (nested alike), in the first one's structure."""
    for s in structures[1:]:
        assert_same_structure(structures[0], s)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*leaves) for leaves in zip(*flats)])

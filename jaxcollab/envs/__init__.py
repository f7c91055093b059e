"""Built-in environment families: :mod:`.parity`, :mod:`.maze`, :mod:`.bomb`, :mod:`.ktane`.

Importing this package imports no family; :mod:`jaxcollab.core.registry` imports a family the
first time one of its names is used.
"""

"""The method contract: a ``Method`` with its options, input kind, result schema and presentation (headline,
views, controls), the registry that lists the methods, and the ``Result`` every method returns."""

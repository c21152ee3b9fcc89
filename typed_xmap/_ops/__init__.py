"""Operations on NamedArrays: indexing, structure, sharding, transforms, tnp internals; method binding."""

"""The results store: the cache's files (keyed, verified, atomic, resumable shards), its keys, cross-process
locks, content hashes and what a stored result records about the run."""

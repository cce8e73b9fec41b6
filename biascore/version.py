"""The engine version: part of every cache key (a result made by another version is never reused as if it
were this one's) and of every snapshot's manifest. Bumped when results or their keys change."""

ENGINE_VERSION = "1.1.0"

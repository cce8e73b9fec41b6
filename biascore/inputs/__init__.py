"""What methods read: pair benchmarks, SEAT/WEAT tests, the input kinds shared by several methods, and the
download of the public benchmark files."""

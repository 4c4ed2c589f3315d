"""The Engineer menu: the client's pattern, N-sweeps, repeats, the stream inspector, prices."""

"""The pure core of copage: no files, sockets, environment, clocks or model calls."""

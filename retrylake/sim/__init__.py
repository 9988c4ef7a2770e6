"""The simulation of a RocketMQ deployment: one engine behind `retrylake generate`, the demo,
the bench and the hand-written sample, with the broker's rules and the trace wire format."""

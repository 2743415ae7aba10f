"""The root hive's generated protobuf and gRPC modules (see ``_generate.py``; never edit them by hand)."""

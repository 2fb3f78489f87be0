"""The analysis cache (``analyze --cache_dir``): split results stored once, replayed exactly.

Modules: ``key`` (what a cached split result depends on), ``store`` (the on-disk entry format,
no pickle), ``target`` (target-encoding partials in an entry), ``fn`` (the DoFn that replays
or computes and stores), ``prune`` and ``cli`` (``beam-prep cache prune``).
"""

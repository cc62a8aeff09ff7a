"""What the benchmark scripts share: a script imports from here, never from another script.

- ``grid``: fine-tuning runs under one protocol (a model row, a cell, the run cache, the paired
  statistics over test items), for finetuning_shapes.py and pretraining_scale.py;
- ``restarts``: the reported seeds and the restart rule for a run at the trivial level;
- ``results_file``: a results JSON written a run per line;
- ``course_recipe``: the course checkpoint's pretraining recipe, read from its recipe file;
- ``measures``: the checkpoints' own measures (MLM and NSP on held-out text, a transformers check);
- ``steps``: one pretraining step's loss call, timed by the throughput benchmarks.
"""

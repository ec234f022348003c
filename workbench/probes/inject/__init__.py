"""The directory put first on PYTHONPATH of a probed deployment: `sitecustomize.py` and the probe it starts."""

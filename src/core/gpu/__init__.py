"""GPUs as DRA devices, for GPU-aware plugins and the trace replay: the device convention
(driver, ``compute`` capacity, ``model`` attribute) and every node's GPUs as numpy arrays kept
current from the DRA manager (``gpus``); the FGD paper's fragmentation measure and the typical
pods it weighs, with the ConfigMap that carries them (``fragmentation``)."""

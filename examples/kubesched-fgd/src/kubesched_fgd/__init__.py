"""kubesched-fgd: the FGD paper's GPU placement policies as kubesched Score plugins.

"Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
Gradient Descent" (Weng et al., USENIX ATC'23) compares six policies on
Alibaba's GPU trace.  Each is an ordinary out-of-tree plugin here, announced
in the entry-point group ``kubesched.plugins``:

- ``FGD``: least growth of GPU fragmentation (:mod:`.fgd`);
- ``BestFit``: least free CPU and GPU left (:mod:`.bestfit`);
- ``DotProd``: Tetris' dot product (:mod:`.dotprod`);
- ``Packing``: shared GPUs, then used nodes, then empty ones (:mod:`.packing`);
- ``Clustering``: GPU pods with their own kind (:mod:`.clustering`);
- ``Random`` (:mod:`.randomscore`).

GPUs come from Dynamic Resource Allocation (ResourceSlices and
ResourceClaims, :mod:`.gpuscore`); ``configs/<policy>.yaml`` enables one
policy, as the paper's experiments do.
"""

from .bestfit import BestFit
from .clustering import Clustering
from .dotprod import DotProd
from .fgd import FGD
from .packing import Packing
from .randomscore import Random

__all__ = ["BestFit", "Clustering", "DotProd", "FGD", "Packing", "Random"]

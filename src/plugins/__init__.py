"""The built-in plugins, each announced through the ``kubesched.plugins`` entry points.

:data:`DEFAULT_PLUGINS` is the default profile's plugin set (upstream's
``getDefaultPlugins``, all through multiPoint, in upstream order with
upstream weights): kube-scheduler's default profile, plugin for plugin,
with the plugins upstream appends for the gates that are on:
NodeDeclaredFeatures, and the workload-aware ones for GenericWorkload and
TopologyAwareWorkloadScheduling (GangScheduling, TopologyPlacementGenerator,
PodGroupPodsCount).
"""

from kubesched.core.framework.config import PluginRef, Plugins, PluginSet

DEFAULT_PLUGINS = Plugins(multi_point=PluginSet(enabled=(
    PluginRef("SchedulingGates"),
    PluginRef("PrioritySort"),
    PluginRef("NodeUnschedulable"),
    PluginRef("NodeName"),
    PluginRef("TaintToleration", 3),
    PluginRef("NodeAffinity", 2),
    PluginRef("NodePorts"),
    PluginRef("NodeResourcesFit", 1),
    PluginRef("VolumeRestrictions"),
    PluginRef("NodeVolumeLimits"),
    PluginRef("VolumeBinding"),
    PluginRef("VolumeZone"),
    PluginRef("PodTopologySpread", 2),
    PluginRef("InterPodAffinity", 2),
    PluginRef("DynamicResources", 2),
    PluginRef("DefaultPreemption"),
    PluginRef("NodeResourcesBalancedAllocation", 1),
    PluginRef("ImageLocality", 1),
    PluginRef("DefaultBinder"),
    PluginRef("NodeDeclaredFeatures"),
    PluginRef("GangScheduling"),
    PluginRef("TopologyPlacementGenerator"),
    PluginRef("PodGroupPodsCount", 1),
)))

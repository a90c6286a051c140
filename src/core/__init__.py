"""What plugins, controllers and drivers share, in rooms from the top down (the import-linter
contract "rooms of core" keeps the order): the scheduler (``scheduler``); helpers of plugins,
controllers and GPU-aware plugins (``plugin_helpers``, ``controller``, ``gpu``); the framework
(``framework``); DRA and observability (``dra``, ``observability``); the cluster (``cluster``);
volumes (``volume``); API objects (``api``); CEL (``cel``); quantities and clocks."""

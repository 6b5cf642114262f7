"""The shells: the session decorator, the plugin, metrics, factory, config and URIs."""

"""The walkthroughs, shipped inside the package as ``ext.tutorials`` (``python -m ext tutorials``
lists and runs them). Each ``NN_topic.py`` is a script and a notebook; ``sidebyside`` is their
shared helper."""

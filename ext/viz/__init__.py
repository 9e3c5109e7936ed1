"""Pictures of the backward graph: ``make_dot`` draws an ext or torch graph with Graphviz."""

from .dot import Digraph, GraphvizNotFound, make_dot, require_dot, resize_graph

__all__ = ["make_dot", "resize_graph", "require_dot", "Digraph", "GraphvizNotFound"]

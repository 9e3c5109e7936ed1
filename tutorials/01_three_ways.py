# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Placeholder
# text

# %%
import numpy as np
from sidebyside import both, check_exercise, graphs

both(lambda T: T.tensor([1.0, 2.0]) * 2)
graphs(lambda T: (T.tensor([2.0], requires_grad=True) * 3).sum())

# %% tags=["solution", "hide-input"]
check_exercise(lambda T: T.ones(2) * 2, lambda T: T.tensor([2.0, 2.0]))

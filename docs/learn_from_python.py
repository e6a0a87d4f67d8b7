import networkx as nx
import numpy as np
import pandas as pd

import hpc

# Five columns: smoking -> tar -> cancer <- asbestos, and one unrelated to the rest.
rng = np.random.default_rng(0)
n = 2000
smoking, asbestos, noise = rng.normal(size=(3, n))
tar = 0.8 * smoking + rng.normal(size=n)
cancer = 0.7 * tar + 0.6 * asbestos + rng.normal(size=n)
df = pd.DataFrame({"smoking": smoking, "tar": tar, "cancer": cancer, "asbestos": asbestos, "noise": noise})

result = hpc.learn(df)                  # psle learn's settings and defaults: hpc.learn(df, time_limit=60, ...)
print(result)                           # Result(p-sle: 5 variables, 3 edges (2 directed, 1 undirected))
print(result.edges)                     # [(from, to, mark)]: mark --> or --- (the data cannot tell the direction)

graph = result.to_networkx()            # an nx.DiGraph over every column, "noise" included
print(sorted(graph.edges(data="mark")))  # an undirected edge appears both ways, each with mark "---"
print(result.adjacency())               # [a, b] = 1 for a --> b; [a, b] = [b, a] = 1 for a --- b

truth = nx.DiGraph([("smoking", "tar"), ("tar", "cancer"), ("asbestos", "cancer")])
print(hpc.evaluate(result, truth))      # F1 (adjacency, arrowhead), SHD; "noise" counts as isolated in the truth
result.save("graph.graphml")            # or .json (with result.meta), .csv, .txt (Tetrad), .dot

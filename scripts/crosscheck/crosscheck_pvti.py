"""VTK's own reader on a split design's ``design.pvti``: the pieces make the whole image.

Reads the folder written by `topopt.formulations.SlabCompliance.write` (``mpirun -n P``)
with VTK's ``vtkXMLPImageDataReader`` (the reader ParaView uses) and compares its
``x_phys`` with the ranks' ``design.<r>-of-<P>.npz`` pieces. VTK runs in a scratch
environment, never a dependency of topopt::

    python3 -m venv /tmp/vtkenv && /tmp/vtkenv/bin/pip install vtk numpy
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONPATH=. \\
        mpirun -n 2 --oversubscribe python tests/mpi_voxel.py /tmp/w2/out.json write
    /tmp/vtkenv/bin/python scripts/crosscheck/crosscheck_pvti.py /tmp/w2/pieces

Measured (vtk 9, 32 x 8 x 8 cantilever on 2 ranks): dimensions (33, 9, 9), 2048 cells,
``max |vtk - npz| = 3.0e-08`` (the .vti pieces are float32, the npz float64).
"""

import glob
import os
import sys

import numpy as np
import vtk
from vtk.util.numpy_support import vtk_to_numpy


def main(folder: str) -> float:
    reader = vtk.vtkXMLPImageDataReader()
    reader.SetFileName(os.path.join(folder, "design.pvti"))
    reader.Update()
    image = reader.GetOutput()
    nx, ny, nz = (d - 1 for d in image.GetDimensions())
    print("dimensions", image.GetDimensions(), "cells", image.GetNumberOfCells())
    field = vtk_to_numpy(image.GetCellData().GetArray("x_phys"))
    field = field.reshape(nz, ny, nx).transpose(2, 1, 0).ravel()   # VTK's x fastest -> C order

    def rank(path):
        return int(os.path.basename(path).split(".")[1].split("-")[0])
    pieces = sorted(glob.glob(os.path.join(folder, "design.*-of-*.npz")), key=rank)
    ours = np.concatenate([np.load(p)["x_phys"] for p in pieces])
    gap = float(np.max(np.abs(field - ours)))
    print(f"max |vtk - npz| = {gap:.1e} (largest value {ours.max():.3f})")
    return gap


if __name__ == "__main__":
    main(sys.argv[1])

"""OpenTURNS' FORM/SORM on the reliability test cases (cross-check; runs only with OpenTURNS).

Not part of topopt and never imported by it: OpenTURNS lives in a scratch
environment::

    python3 -m venv /tmp/ot-venv && /tmp/ot-venv/bin/pip install openturns numpy scipy
    /tmp/ot-venv/bin/python scripts/crosscheck/openturns_reliability.py

Prints, per case, OpenTURNS' Hasofer-Lind beta, the FORM probability and the
SORM probabilities of Breitung, Hohenbichler and Tvedt, the design point and
the importance factors; for the Nataf case the correlation of the underlying
normals (OpenTURNS' normal copula) and the Pearson correlation of ``X`` it
implies. tests/test_reliability_dist.py and tests/test_reliability_more.py
compare topopt with the numbers this script printed (quoted there).
OpenTURNS' convention is failure when ``g(x) < 0``; topopt's is ``F >= z``:
the cases below use ``g = z - F``.
"""

import math
import os
import sys

import numpy as np
import openturns as ot

# the reliability test cases (numpy only): the case analysed here is the tests' own
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
from reliability_cases import P0, quadratic_coefficients  # noqa: E402

ot.RandomGenerator.SetSeed(0)


def analyse(name, formula, distribution, start=None):
    """FORM and SORM of the event ``g(X) < 0``; prints and returns the numbers.

    `formula` is ``g`` in OpenTURNS' symbolic syntax in ``x0, x1, ...``: its
    derivatives are exact (a PythonFunction's finite-difference Hessian gave
    curvatures off by 20% on the column case).
    """
    names = [f"x{i}" for i in range(distribution.getDimension())]
    model = ot.SymbolicFunction(names, [formula])
    event = ot.ThresholdEvent(ot.CompositeRandomVector(model, ot.RandomVector(distribution)),
                              ot.Less(), 0.0)
    solver = ot.AbdoRackwitz()
    solver.setMaximumIterationNumber(1000)
    solver.setMaximumAbsoluteError(1e-14)
    solver.setMaximumRelativeError(1e-14)
    solver.setMaximumResidualError(1e-14)
    solver.setMaximumConstraintError(1e-14)
    x0 = distribution.getMean() if start is None else ot.Point(start)
    form = ot.FORM(solver, event, x0)
    form.run()
    fr = form.getResult()
    sorm = ot.SORM(solver, event, x0)
    sorm.run()
    sr = sorm.getResult()
    out = dict(beta=fr.getHasoferReliabilityIndex(), form=fr.getEventProbability(),
               breitung=sr.getEventProbabilityBreitung(),
               hohenbichler=sr.getEventProbabilityHohenbichler(),
               tvedt=sr.getEventProbabilityTvedt(),
               u=list(fr.getStandardSpaceDesignPoint()),
               x=list(fr.getPhysicalSpaceDesignPoint()),
               importance=list(fr.getImportanceFactors()))
    print(f"\n== {name}")
    print(f"   beta          {out['beta']:.12f}")
    for key in ("form", "breitung", "hohenbichler", "tvedt"):
        p = out[key]
        print(f"   pf {key:13s}{p:.12e}   ln pf {math.log(p):.10f}")
    print("   u*           ", np.array2string(np.array(out["u"]), precision=10))
    print("   x*           ", np.array2string(np.array(out["x"]), precision=10))
    print("   importance   ", np.array2string(np.array(out["importance"]), precision=10))
    return out


def main():
    print("OpenTURNS", ot.__version__)
    std10 = ot.Normal(10)
    # 1. paraboloid F = t1 - kappa/2 sum_{i>=2} t_i^2 >= 3 (tests/test_reliability.py)
    analyse("paraboloid kappa=0.1 beta=3 n=10",
            "3 - x0 + 0.05 * (" + " + ".join(f"x{i}^2" for i in range(1, 10)) + ")", std10)
    # 2. compliance-like quadratic c0 + 2 b.t + t.A.t >= 14 at P0 (QUAD, Z_QUAD)
    c0, b, A = quadratic_coefficients(P0)
    terms = [repr(float(c0))] + [f"2 * {float(b[i])!r} * x{i}" for i in range(3)] + \
        [f"{float(A[i, j])!r} * x{i} * x{j}" for i in range(3) for j in range(3)]
    analyse("quadratic QUAD(P0), z=14", "14 - (" + " + ".join(terms) + ")",
            ot.Normal(3), start=[1.0, 1.0, 1.0])
    # 3. the paraboloid with curvature 0.3, beta 2.5, n=4 (a strongly curved case)
    analyse("paraboloid kappa=0.3 beta=2.5 n=4", "2.5 - x0 + 0.15 * (x1^2 + x2^2 + x3^2)",
            ot.Normal(4))
    # 4. ln S - ln R >= 0, R ~ LN(ln 5, 0.2), S ~ LN(ln 2, 0.3)
    RS = ot.JointDistribution([ot.LogNormal(math.log(5.0), 0.2), ot.LogNormal(math.log(2.0), 0.3)])
    analyse("lognormal R, S: ln S - ln R >= 0", "ln(x0) - ln(x1)", RS)
    # 5. Gumbel load (mean 50, std 10) against the threshold 100
    gum = ot.Gumbel(10.0 * math.sqrt(6.0) / math.pi, 50.0 - 0.5772156649015329 * 10.0
                    * math.sqrt(6.0) / math.pi)
    analyse("Gumbel load >= 100", "100 - x0", ot.JointDistribution([gum]))
    # 6. Nataf: R lognormal (mean 10, std 2), S Gumbel (mean 4, std 1), Weibull strength
    #    factor W (mean 1, std 0.1); normal-copula correlation R0 given, F = S*... nonlinear
    marg = [ot.LogNormal(), ot.Gumbel(), ot.WeibullMin()]
    marg[0] = ot.LogNormalMuSigma(10.0, 2.0).getDistribution()
    marg[1] = ot.GumbelMuSigma(4.0, 1.0).getDistribution()
    marg[2] = ot.WeibullMinMuSigma(1.0, 0.1).getDistribution()
    R0 = ot.CorrelationMatrix(3)
    R0[0, 1] = 0.4
    R0[0, 2] = -0.3
    R0[1, 2] = 0.2
    joint = ot.JointDistribution(marg, ot.NormalCopula(R0))
    print("\n== Nataf case: normal-copula correlation R0 (the Pearson correlation of X that it")
    print("   implies is computed in the test by scipy's dblquad; OpenTURNS' own")
    print("   getPearsonCorrelation() is an approximation, printed for the record)")
    print("   R0     ", np.array2string(np.array(R0), precision=12))
    print("   OT Pearson (approx.)", np.array2string(np.array(joint.getPearsonCorrelation()),
                                                  precision=6))
    for i, d in enumerate(marg):
        print(f"   marginal {i}: {d}")
    analyse("Nataf: F = 1.6 S - R W >= 0", "x0 * x2 - 1.6 * x1", joint)
    column()


def normal_gumbel_ratio(gumbel):
    """``rho0/rho`` for a normal and a Gumbel marginal: ``1/E[u z(u)]`` (Stein's lemma),
    by Gauss-Hermite quadrature of OpenTURNS' quantile function."""
    t, w = np.polynomial.hermite_e.hermegauss(96)
    w = w / np.sqrt(2 * np.pi)
    x = np.array([gumbel.computeQuantile(float(ot.Normal().computeCDF(v)))[0]
                  if v < 0 else gumbel.computeQuantile(float(ot.Normal().computeCDF(-v)),
                                                       True)[0] for v in t])
    z = (x - gumbel.getMean()[0]) / gumbel.getStandardDeviation()[0]
    return 1.0 / float(w @ (t * z))


def column():
    """Der Kiureghian (2022), Structural and System Reliability, Examples 6.5 and 7.2:
    a column with moments M1, M2 (normal), axial load P (Gumbel), yield stress Y (Weibull),
    Pearson correlations rho(M1, M2) = 0.5, rho(M_i, P) = 0.3; failure when
    1 - M1/(s1 Y) - M2/(s2 Y) - (P/(a Y))^2 <= 0."""
    m1 = ot.Normal(250.0, 75.0)
    m2 = ot.Normal(125.0, 37.5)
    p = ot.GumbelMuSigma(2500.0, 500.0).getDistribution()
    y = ot.WeibullMinMuSigma(40000.0, 4000.0).getDistribution()
    ratio = normal_gumbel_ratio(p)
    R0 = ot.CorrelationMatrix(4)
    R0[0, 1] = 0.5                          # normal-normal: no correction
    R0[0, 2] = R0[1, 2] = 0.3 * ratio       # normal-Gumbel
    print(f"\n== column (Der Kiureghian 2022, Ex. 6.5/7.2): normal-Gumbel rho0/rho = "
          f"{ratio:.12f}")
    print(f"   marginals {m1}, {m2}, {p}, {y}")
    joint = ot.JointDistribution([m1, m2, p, y], ot.NormalCopula(R0))
    a, s1, s2 = 0.190, 0.030, 0.015
    analyse("column: 1 - M1/(s1 Y) - M2/(s2 Y) - (P/(a Y))^2 <= 0",
            f"1 - x0 / ({s1!r} * x3) - x1 / ({s2!r} * x3) - (x2 / ({a!r} * x3))^2", joint)


if __name__ == "__main__":
    main()

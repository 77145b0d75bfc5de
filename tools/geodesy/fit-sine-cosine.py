#!/usr/bin/env python3
"""Fits the polynomial coefficients of sineCosine(degrees:) (Sources/GeofenceGeometry/SineCosine.swift).

On |x| <= pi/4, with z = x^2:
    sin x = x + x^3 P(z),           P(z) = (sin x - x) / x^3,          degree 5 in z (x^3 .. x^13)
    cos x = 1 - z/2 + z^2 Q(z),     Q(z) = (cos x - 1 + z/2) / z^2,    degree 5 in z (x^4 .. x^14)
P and Q are interpolated at Chebyshev nodes on [0, (pi/4)^2] in 60-digit arithmetic
(mpmath.chebyfit), which is within a small factor of the minimax polynomial. The printed
errors are the fits' maximum absolute errors in P and Q; the error they add to sin x and cos x
is that times x^2 and z^2 (at most 0.62 and 0.38 times), far below half an ulp.
The rounded coefficients are printed as Swift hexadecimal literals (exact Doubles).

Usage: pip install mpmath && python3 tools/geodesy/fit-sine-cosine.py
"""

import mpmath as mp

mp.mp.dps = 60
Z = (mp.pi / 4) ** 2


def p(z):
    x = mp.sqrt(z)
    return (mp.sin(x) - x) / x**3


def q(z):
    x = mp.sqrt(z)
    return (mp.cos(x) - 1 + z / 2) / z**2


def main():
    # Chebyshev nodes never fall on the ends, so z = 0 (a removable singularity) is not met.
    for name, f, power in (("sin", p, 3), ("cos", q, 4)):
        coefficients, error = mp.chebyfit(f, [0, Z], 6, error=True)
        print(f"// {name}: max |fit error| {mp.nstr(error, 3)}")
        for k, c in enumerate(reversed(coefficients)):
            print(f"{float(c).hex()}  // x^{power + 2 * k}: {float(c)!r}")


if __name__ == "__main__":
    main()

"""NPBench's NumPy kernels (spcl/npbench, ``npbench/benchmarks/**``), rewritten in its style:
in-place slice updates of arguments, Python loops over ``range`` (unrolled by the trace),
float64 inputs uniform in [0, 1) as its initializers give them. Sizes: small ones here."""
import numpy as np

from .case import case, not_written, out_of_scope


def _mats(*shapes):
    """make(rng, n): uniform arrays of the given shapes, each dim a multiple of n."""
    return lambda rng, n: tuple(rng.random(tuple(d * n for d in s)) for s in shapes)


def _spd(rng, n):
    a = rng.random((n, n))
    return a @ a.T + n * np.eye(n)


@case("npbench", lambda r, n: (r.random((n, n)), r.random((n, n)), r.random((n, n)),
                               r.random((n, n)), r.random((n, n)), r.random((n, n))),
      small=6, big=48)
def npbench_adi(u, v, p, q, a_coef, b_coef):
    # NPBench's ADI with TSTEPS=1 and its scalar coefficients as arrays' corners
    N = u.shape[0]
    a, b, c = -0.25, 1.5, -0.25
    d, e, f = -0.25, 1.5, -0.25
    v[0, 1:N - 1] = 1.0
    p[1:N - 1, 0] = 0.0
    q[1:N - 1, 0] = v[0, 1:N - 1]
    for j in range(1, N - 1):
        p[1:N - 1, j] = -c / (a * p[1:N - 1, j - 1] + b)
        q[1:N - 1, j] = (-d * u[j, 0:N - 2] + (1.0 + 2.0 * d) * u[j, 1:N - 1] - f * u[j, 2:N]
                         - a * q[1:N - 1, j - 1]) / (a * p[1:N - 1, j - 1] + b)
    v[N - 1, 1:N - 1] = 1.0
    for j in range(N - 2, 0, -1):
        v[j, 1:N - 1] = p[1:N - 1, j] * v[j + 1, 1:N - 1] + q[1:N - 1, j]
    u[1:N - 1, 0] = 1.0
    p[1:N - 1, 0] = 0.0
    q[1:N - 1, 0] = u[1:N - 1, 0]
    for j in range(1, N - 1):
        p[1:N - 1, j] = -f / (d * p[1:N - 1, j - 1] + e)
        q[1:N - 1, j] = (-a * v[0:N - 2, j] + (1.0 + 2.0 * a) * v[1:N - 1, j] - c * v[2:N, j]
                         - d * q[1:N - 1, j - 1]) / (d * p[1:N - 1, j - 1] + e)
    u[1:N - 1, N - 1] = 1.0
    for j in range(N - 2, 0, -1):
        u[1:N - 1, j] = p[1:N - 1, j] * u[1:N - 1, j + 1] + q[1:N - 1, j]


@case("npbench", lambda r, n: tuple(r.random(n) for _ in range(4)), small=16, big=200000)
def npbench_arc_distance(theta_1, phi_1, theta_2, phi_2):
    temp = np.sin((theta_2 - theta_1) / 2)**2 + np.cos(theta_1) * np.cos(theta_2) * np.sin(
        (phi_2 - phi_1) / 2)**2
    distance_matrix = 2 * (np.arctan2(np.sqrt(temp), np.sqrt(1 - temp)))
    return distance_matrix


@case("npbench", lambda r, n: (r.random((n, n + 2)), r.random(n + 2)), small=5, big=400)
def npbench_atax(A, x):
    return (A @ x) @ A


@case("npbench", lambda r, n: (r.random(n * n), r.random(n * n)), small=4, big=300, grad=False)
def npbench_azimint_hist(data, radius):
    npt = 10
    histu = np.histogram(radius, npt)[0]
    histw = np.histogram(radius, npt, weights=data)[0]
    return histw / histu


@case("npbench", lambda r, n: (r.random(n * n), r.random(n * n)), small=4, big=300)
def npbench_azimint_naive(data, radius):
    npt = 10
    rmax = radius.max()
    res = np.zeros(npt, dtype=np.float64)
    for i in range(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        mask_r12 = np.logical_and((r1 <= radius), (radius < r2))
        values_r12 = data[mask_r12]
        res[i] = values_r12.mean()
    return res


@case("npbench", lambda r, n: (r.random((n, n + 1)), r.random(n + 1), r.random(n)),
      small=5, big=400)
def npbench_bicg(A, p, r):
    return r @ A, A @ p


def _build_up_b(b, rho, dt, u, v, dx, dy):
    b[1:-1, 1:-1] = (rho * (1 / dt * ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx) +
                                      (v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy)) -
                            ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx))**2 - 2 *
                            ((u[2:, 1:-1] - u[0:-2, 1:-1]) / (2 * dy) *
                             (v[1:-1, 2:] - v[1:-1, 0:-2]) / (2 * dx)) -
                            ((v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy))**2))


def _pressure_poisson(nit, p, dx, dy, b):
    pn = np.empty_like(p)
    pn = p.copy()
    for q in range(nit):
        pn = p.copy()
        p[1:-1, 1:-1] = (((pn[1:-1, 2:] + pn[1:-1, 0:-2]) * dy**2 +
                          (pn[2:, 1:-1] + pn[0:-2, 1:-1]) * dx**2) /
                         (2 * (dx**2 + dy**2)) - dx**2 * dy**2 /
                         (2 * (dx**2 + dy**2)) * b[1:-1, 1:-1])
        p[:, -1] = p[:, -2]
        p[0, :] = p[1, :]
        p[:, 0] = p[:, 1]
        p[-1, :] = 0


@case("npbench", lambda r, n: (np.zeros((n, n)), np.zeros((n, n)), r.random((n, n)) * 0.1),
      small=6, big=64)
def npbench_cavity_flow(u, v, p):
    nx = ny = u.shape[0]
    nt, nit, rho, nu = 3, 3, 1.0, 0.1
    dt = 0.001
    dx, dy = 2 / (nx - 1), 2 / (ny - 1)
    un = np.empty_like(u)
    vn = np.empty_like(v)
    b = np.zeros((ny, nx))
    for n in range(nt):
        un = u.copy()
        vn = v.copy()
        _build_up_b(b, rho, dt, u, v, dx, dy)
        _pressure_poisson(nit, p, dx, dy, b)
        u[1:-1, 1:-1] = (un[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx *
                         (un[1:-1, 1:-1] - un[1:-1, 0:-2]) -
                         vn[1:-1, 1:-1] * dt / dy * (un[1:-1, 1:-1] - un[0:-2, 1:-1]) -
                         dt / (2 * rho * dx) * (p[1:-1, 2:] - p[1:-1, 0:-2]) + nu *
                         (dt / dx**2 * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, 0:-2]) +
                          dt / dy**2 * (un[2:, 1:-1] - 2 * un[1:-1, 1:-1] + un[0:-2, 1:-1])))
        v[1:-1, 1:-1] = (vn[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx *
                         (vn[1:-1, 1:-1] - vn[1:-1, 0:-2]) -
                         vn[1:-1, 1:-1] * dt / dy * (vn[1:-1, 1:-1] - vn[0:-2, 1:-1]) -
                         dt / (2 * rho * dy) * (p[2:, 1:-1] - p[0:-2, 1:-1]) + nu *
                         (dt / dx**2 * (vn[1:-1, 2:] - 2 * vn[1:-1, 1:-1] + vn[1:-1, 0:-2]) +
                          dt / dy**2 * (vn[2:, 1:-1] - 2 * vn[1:-1, 1:-1] + vn[0:-2, 1:-1])))
        u[0, :] = 0
        u[:, 0] = 0
        u[:, -1] = 0
        u[-1, :] = 1
        v[0, :] = 0
        v[-1, :] = 0
        v[:, 0] = 0
        v[:, -1] = 0


@case("npbench", lambda r, n: (_spd(r, n),), small=6, big=40)
def npbench_cholesky(A):
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


@case("npbench", lambda r, n: (_spd(r, n),), small=6, big=200)
def npbench_cholesky2(A):
    A[:] = np.linalg.cholesky(A) + np.triu(A, k=1)


@case("npbench", lambda r, n: (r.integers(0, 20, (n, n)), r.integers(0, 20, (n, n)),
                               np.int64(4), np.int64(3), np.int64(9)),
      small=5, big=500, grad=False)
def npbench_compute(array_1, array_2, a, b, c):
    return np.clip(array_1, 2, 10) * a + array_2 * b + c


@case("npbench", lambda r, n: (r.random((n, n)), r.random((n, n))), small=4, big=32,
      grad=False)
def npbench_contour_integral(Ham, int_pts_re):
    # complex resolvent integral: (z I - H)^{-1} summed over contour points
    NM = Ham.shape[0]
    P0 = np.zeros((NM, NM), dtype=np.complex128)
    for z in np.exp(1j * np.linspace(0, np.pi, 4)):
        Tz = z * np.eye(NM) - Ham
        P0 += np.linalg.inv(Tz) * z
    return P0


@case("npbench", lambda r, n: (r.random((2, n + 2, n + 2, 3)), r.random((3, 3, 3, 4)),
                               r.random(4)), small=2, big=12)
def npbench_conv2d_bias(input, weights, bias):
    return _lenet_conv2d(input, weights) + bias     # NPBench's conv2d, which lenet reuses


@case("npbench", lambda r, n: (r.random((2 * n, n)),), small=4, big=48)
def npbench_correlation(data):
    M = data.shape[1]
    float_n = np.float64(data.shape[0])
    mean = np.mean(data, axis=0)
    stddev = np.std(data, axis=0)
    stddev[stddev <= 0.1] = 1.0
    data -= mean
    data /= np.sqrt(float_n) * stddev
    corr = np.eye(M, dtype=data.dtype)
    for i in range(M - 1):
        corr[i + 1:M, i] = corr[i, i + 1:M] = data[:, i] @ data[:, i + 1:M]
    return corr


@case("npbench", lambda r, n: (r.random((2 * n, n)),), small=4, big=48)
def npbench_covariance(data):
    M = data.shape[1]
    float_n = np.float64(data.shape[0])
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
    return cov


@case("npbench", lambda r, n: (r.random((n, n + 1)),), small=4, big=40)
def npbench_deriche(imgIn):
    alpha = 0.25
    W, H = imgIn.shape
    k = (1.0 - np.exp(-alpha)) * (1.0 - np.exp(-alpha)) / (
        1.0 + alpha * np.exp(-alpha) - np.exp(2.0 * alpha))
    a1 = a5 = k
    a2 = a6 = k * np.exp(-alpha) * (alpha - 1.0)
    a3 = a7 = k * np.exp(-alpha) * (alpha + 1.0)
    a4 = a8 = -k * np.exp(-2.0 * alpha)
    b1 = 2.0**(-alpha)
    b2 = -np.exp(-2.0 * alpha)
    c1 = c2 = 1
    y1 = np.empty_like(imgIn)
    y1[:, 0] = a1 * imgIn[:, 0]
    y1[:, 1] = a1 * imgIn[:, 1] + a2 * imgIn[:, 0] + b1 * y1[:, 0]
    for j in range(2, H):
        y1[:, j] = (a1 * imgIn[:, j] + a2 * imgIn[:, j - 1] + b1 * y1[:, j - 1] +
                    b2 * y1[:, j - 2])
    y2 = np.empty_like(imgIn)
    y2[:, -1] = 0.0
    y2[:, -2] = a3 * imgIn[:, -1]
    for j in range(H - 3, -1, -1):
        y2[:, j] = (a3 * imgIn[:, j + 1] + a4 * imgIn[:, j + 2] + b1 * y2[:, j + 1] +
                    b2 * y2[:, j + 2])
    imgOut = c1 * (y1 + y2)
    y1[0, :] = a5 * imgOut[0, :]
    y1[1, :] = a5 * imgOut[1, :] + a6 * imgOut[0, :] + b1 * y1[0, :]
    for i in range(2, W):
        y1[i, :] = (a5 * imgOut[i, :] + a6 * imgOut[i - 1, :] + b1 * y1[i - 1, :] +
                    b2 * y1[i - 2, :])
    y2[-1, :] = 0.0
    y2[-2, :] = a7 * imgOut[-1, :]
    for i in range(W - 3, -1, -1):
        y2[i, :] = (a7 * imgOut[i + 1, :] + a8 * imgOut[i + 2, :] + b1 * y2[i + 1, :] +
                    b2 * y2[i + 2, :])
    imgOut[:] = c2 * (y1 + y2)
    return imgOut


@case("npbench", lambda r, n: (r.random((n, n + 1, n + 2)), r.random((n + 2, n + 2))),
      small=3, big=40)
def npbench_doitgen(A, C4):
    NR, NQ, NP = A.shape
    for r in range(NR):
        A[r, :, :] = np.reshape(np.reshape(A[r], (NQ, NP)) @ C4, (NQ, NP))


@case("npbench", lambda r, n: (r.random(n) * 0.1,), small=6, big=60)
def npbench_durbin(r):
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, r.shape[0]):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y


@case("npbench", lambda r, n: (r.random((n, n + 1)), r.random((n, n + 1)), r.random((n, n + 1)),
                               r.random(4)), small=4, big=200)
def npbench_fdtd_2d(ex, ey, hz, _fict_):
    for t in range(_fict_.shape[0]):
        ey[0, :] = _fict_[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


@case("npbench", lambda r, n: (r.integers(1, 100, (n, n)),), small=5, big=60, grad=False)
def npbench_floyd_warshall(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path[:], np.add.outer(path[:, k], path[k, :]))


@case("npbench", lambda r, n: (1.5, 1.2, r.random((n, n + 1)), r.random((n, n + 2)),
                               r.random((n + 2, n + 1))), small=4, big=300)
def npbench_gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


@case("npbench", lambda r, n: (1.5, 1.2) + tuple([r.random((n, n))] + [r.random(n)
                                                                       for _ in range(8)]),
      small=5, big=400)
def npbench_gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


@case("npbench", lambda r, n: (1.5, 1.2, r.random((n, n)), r.random((n, n)), r.random(n)),
      small=5, big=400)
def npbench_gesummv(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


@case("npbench", lambda r, n: (r.random((n, n)),), small=5, big=300)
def npbench_go_fast(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


@case("npbench", lambda r, n: (r.random((n + 2, n)) + np.eye(n + 2, n),), small=4, big=40)
def npbench_gramschmidt(A):
    Q = np.zeros_like(A)
    R = np.zeros((A.shape[1], A.shape[1]), dtype=A.dtype)
    for k in range(A.shape[1]):
        nrm = np.dot(A[:, k], A[:, k])
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, A.shape[1]):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


@case("npbench", lambda r, n: (r.random((n + 4, n + 4, 3)), np.zeros((n, n, 3)),
                               r.random((n, n, 3))), small=3, big=64)
def npbench_hdiff(in_field, out_field, coeff):
    I, J, K = out_field.shape[0], out_field.shape[1], out_field.shape[2]
    lap_field = 4.0 * in_field[1:I + 3, 1:J + 3, :] - (
        in_field[2:I + 4, 1:J + 3, :] + in_field[0:I + 2, 1:J + 3, :] +
        in_field[1:I + 3, 2:J + 4, :] + in_field[1:I + 3, 0:J + 2, :])
    res = lap_field[1:, 1:J + 1, :] - lap_field[:-1, 1:J + 1, :]
    flx_field = np.where((res * (in_field[2:I + 3, 2:J + 2, :] - in_field[1:I + 2, 2:J + 2, :]))
                         > 0, 0, res)
    res = lap_field[1:I + 1, 1:, :] - lap_field[1:I + 1, :-1, :]
    fly_field = np.where((res * (in_field[2:I + 2, 2:J + 3, :] - in_field[2:I + 2, 1:J + 2, :]))
                         > 0, 0, res)
    out_field[:, :, :] = in_field[2:I + 2, 2:J + 2, :] - coeff[:, :, :] * (
        flx_field[1:, :, :] - flx_field[:-1, :, :] + fly_field[:, 1:, :] - fly_field[:, :-1, :])


@case("npbench", lambda r, n: (r.random((n, n, n)), r.random((n, n, n))), small=4, big=40)
def npbench_heat_3d(A, B):
    for t in range(1, 3):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1]) +
            0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1]) +
            0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, 0:-2]) +
            A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1]) +
            0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1]) +
            0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, 0:-2]) +
            B[1:-1, 1:-1, 1:-1])


@case("npbench", lambda r, n: (r.random(n), r.random(n)), small=8, big=100000)
def npbench_jacobi_1d(A, B):
    for t in range(1, 4):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


@case("npbench", lambda r, n: (r.random((n, n)), r.random((n, n))), small=6, big=400)
def npbench_jacobi_2d(A, B):
    for t in range(1, 4):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] +
                               A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] +
                               B[:-2, 1:-1])


@case("npbench", lambda r, n: (1.5, 1.2, r.random((n, n + 1)), r.random((n + 1, n + 2)),
                               r.random((n + 2, n + 3)), r.random((n, n + 3))), small=4, big=200)
def npbench_k2mm(alpha, beta, A, B, C, D):
    D[:] = alpha * A @ B @ C + beta * D


@case("npbench", lambda r, n: (r.random((n, n + 1)), r.random((n + 1, n + 2)),
                               r.random((n + 2, n + 3)), r.random((n + 3, n))), small=4, big=200)
def npbench_k3mm(A, B, C, D):
    return A @ B @ C @ D


def _lenet_conv2d(input, weights):
    K = weights.shape[0]
    N = input.shape[0]
    H_out = input.shape[1] - K + 1
    W_out = input.shape[2] - K + 1
    C_out = weights.shape[3]
    output = np.empty((N, H_out, W_out, C_out), dtype=np.float64)
    for i in range(H_out):
        for j in range(W_out):
            output[:, i, j, :] = np.sum(
                input[:, i:i + K, j:j + K, :, np.newaxis] * weights[np.newaxis, :, :, :],
                axis=(1, 2, 3))
    return output


def _relu(x):
    return np.maximum(x, 0)


def _maxpool2d(x):
    output = np.empty([x.shape[0], x.shape[1] // 2, x.shape[2] // 2, x.shape[3]],
                      dtype=x.dtype)
    for i in range(x.shape[1] // 2):
        for j in range(x.shape[2] // 2):
            output[:, i, j, :] = np.max(x[:, 2 * i:2 * i + 2, 2 * j:2 * j + 2, :], axis=(1, 2))
    return output


@case("npbench", lambda r, n: (r.random((2, 12, 12, 1)), r.random((3, 3, 1, 2)), r.random(2),
                               r.random((3, 3, 2, 3)), r.random(3), r.random((3, 5)),
                               r.random(5), r.random((5, 4)), r.random(4)), small=1, big=1)
def npbench_lenet(input, conv1, conv1bias, conv2, conv2bias, fc1w, fc1b, fc2w, fc2b):
    N = input.shape[0]
    x = _relu(_lenet_conv2d(input, conv1) + conv1bias)
    x = _maxpool2d(x)
    x = _relu(_lenet_conv2d(x, conv2) + conv2bias)
    x = _maxpool2d(x)
    x = np.reshape(x, (N, -1))
    x = _relu(x @ fc1w + fc1b)
    return x @ fc2w + fc2b


@case("npbench", lambda r, n: (r.random((n, n)) + n * np.eye(n),), small=5, big=40)
def npbench_lu(A):
    for i in range(A.shape[0]):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, A.shape[0]):
            A[i, j] -= A[i, :i] @ A[:i, j]


@case("npbench", lambda r, n: (r.random((n, n)) + n * np.eye(n), r.random(n)), small=5, big=40)
def npbench_ludcmp(A, b):
    N = A.shape[0]
    x = np.zeros_like(b)
    y = np.zeros_like(b)
    for i in range(N):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, N):
            A[i, j] -= A[i, :i] @ A[:i, j]
    for i in range(N):
        y[i] = b[i] - A[i, :i] @ y[:i]
    for i in range(N - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x, y


@case("npbench", lambda r, n: (-2.0, 0.5, -1.25, 1.25, 8 * n, 8 * n), small=1, big=20,
      grad=False, static=(4, 5))
def npbench_mandelbrot1(xmin, xmax, ymin, ymax, xn, yn):
    maxiter, horizon = 8, 2.0
    X = np.linspace(xmin, xmax, xn, dtype=np.float64)
    Y = np.linspace(ymin, ymax, yn, dtype=np.float64)
    C = X + Y[:, None] * 1j
    N = np.zeros(C.shape, dtype=np.int64)
    Z = np.zeros(C.shape, dtype=np.complex128)
    for n in range(maxiter):
        I = np.less(abs(Z), horizon)
        N[I] = n
        Z[I] = Z[I]**2 + C[I]
    N[N == maxiter - 1] = 0
    return Z, N


@case("npbench", lambda r, n: (r.random((n, 2 * n)), r.random((2 * n, n + 1)), r.random(n + 1),
                               r.random((n + 1, n + 2)), r.random(n + 2),
                               r.random((n + 2, n)), r.random(n)), small=3, big=64)
def npbench_mlp(input, w1, b1, w2, b2, w3, b3):
    x = _relu(input @ w1 + b1)
    x = _relu(x @ w2 + b2)
    x = x @ w3 + b3
    tmp_max = np.max(x, axis=-1, keepdims=True)
    tmp_out = np.exp(x - tmp_max)
    tmp_sum = np.sum(tmp_out, axis=-1, keepdims=True)
    return tmp_out / tmp_sum


@case("npbench", lambda r, n: (r.random(n), r.random(n), r.random(n), r.random(n),
                               r.random((n, n))), small=5, big=400)
def npbench_mvt(x1, x2, y_1, y_2, A):
    x1 += A @ y_1
    x2 += y_2 @ A


def _nbody_acc(pos, mass, G, softening):
    x = pos[:, 0:1]
    y = pos[:, 1:2]
    z = pos[:, 2:3]
    dx = x.T - x
    dy = y.T - y
    dz = z.T - z
    inv_r3 = (dx**2 + dy**2 + dz**2 + softening**2)
    inv_r3[inv_r3 > 0] = inv_r3[inv_r3 > 0]**(-1.5)
    ax = G * (dx * inv_r3) @ mass
    ay = G * (dy * inv_r3) @ mass
    az = G * (dz * inv_r3) @ mass
    return np.hstack((ax, ay, az))


def _nbody_energy(pos, vel, mass, G):
    KE = 0.5 * np.sum(np.sum(mass * vel**2))
    x = pos[:, 0:1]
    y = pos[:, 1:2]
    z = pos[:, 2:3]
    dx = x.T - x
    dy = y.T - y
    dz = z.T - z
    inv_r = np.sqrt(dx**2 + dy**2 + dz**2)
    inv_r[inv_r > 0] = 1.0 / inv_r[inv_r > 0]
    PE = G * np.sum(np.sum(np.triu(-(mass * mass.T) * inv_r, 1)))
    return KE, PE


@case("npbench", lambda r, n: (r.random((n, 1)) * 20.0 / n, r.standard_normal((n, 3)),
                               r.standard_normal((n, 3))), small=5, big=100)
def npbench_nbody(mass, pos, vel):
    Nt, dt, softening, G = 3, 0.01, 0.1, 1.0
    vel -= np.mean(mass * vel, 0) / np.mean(mass)
    acc = _nbody_acc(pos, mass, G, softening)
    KE = np.ndarray(Nt + 1, dtype=np.float64)
    PE = np.ndarray(Nt + 1, dtype=np.float64)
    KE[0], PE[0] = _nbody_energy(pos, vel, mass, G)
    for i in range(Nt):
        vel += acc * dt / 2.0
        pos += vel * dt
        acc = _nbody_acc(pos, mass, G, softening)
        vel += acc * dt / 2.0
        KE[i + 1], PE[i + 1] = _nbody_energy(pos, vel, mass, G)
    return KE, PE


def _batchnorm2d(x, eps=1e-5):
    mean = np.mean(x, axis=0, keepdims=True)
    std = np.std(x, axis=0, keepdims=True)
    return (x - mean) / np.sqrt(std + eps)


@case("npbench", lambda r, n: (r.random((2, 6, 6, 3)), r.random((1, 1, 3, 2)),
                               r.random((3, 3, 2, 2)), r.random((1, 1, 2, 3))), small=1, big=1)
def npbench_resnet(input, conv1, conv2, conv3):
    padded = np.zeros((input.shape[0], input.shape[1] + 2, input.shape[2] + 2, conv1.shape[3]))
    padded[:, 1:-1, 1:-1, :] = _lenet_conv2d(input, conv1)
    x = _batchnorm2d(padded)
    x = _relu(x)
    x = _lenet_conv2d(x, conv2)
    x = _batchnorm2d(x)
    x = _relu(x)
    x = _lenet_conv2d(x, conv3)
    x = _batchnorm2d(x)
    return _relu(x + input)


@case("npbench", lambda r, n: (r.random((n, n)),), small=6, big=24)
def npbench_seidel_2d(A):
    N = A.shape[0]
    for t in range(0, 1):
        for i in range(1, N - 1):
            A[i, 1:-1] += (A[i - 1, :-2] + A[i - 1, 1:-1] + A[i - 1, 2:] + A[i, 2:] +
                           A[i + 1, :-2] + A[i + 1, 1:-1] + A[i + 1, 2:])
            for j in range(1, N - 1):
                A[i, j] += A[i, j - 1]
                A[i, j] /= 9.0


@case("npbench", lambda r, n: (r.random((2, 2, n, n)),), small=4, big=128)
def npbench_softmax(x):
    tmp_max = np.max(x, axis=-1, keepdims=True)
    tmp_out = np.exp(x - tmp_max)
    tmp_sum = np.sum(tmp_out, axis=-1, keepdims=True)
    return tmp_out / tmp_sum


@case("npbench", lambda r, n: (1.5, 1.2, r.random((n, n + 1)), r.random((n, n)),
                               r.random((n, n + 1))), small=4, big=40)
def npbench_symm(alpha, beta, C, A, B):
    temp2 = np.empty((C.shape[1], ), dtype=C.dtype)
    C *= beta
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


@case("npbench", lambda r, n: (1.5, 1.2, r.random((n, n)), r.random((n, n + 1)),
                               r.random((n, n + 1))), small=4, big=40)
def npbench_syr2k(alpha, beta, C, A, B):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += (A[:i + 1, k] * alpha * B[i, k] + B[:i + 1, k] * alpha * A[i, k])


@case("npbench", lambda r, n: (1.5, 1.2, r.random((n, n)), r.random((n, n + 1))),
      small=4, big=40)
def npbench_syrk(alpha, beta, C, A):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


@case("npbench", lambda r, n: (np.tril(r.random((n, n))) + n * np.eye(n), r.random(n),
                               r.random(n)), small=5, big=80)
def npbench_trisolv(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


@case("npbench", lambda r, n: (1.5, r.random((n, n)), r.random((n, n + 1))), small=4, big=40)
def npbench_trmm(alpha, A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha


out_of_scope("npbench_channel_flow", "npbench",
             "`while udiff > .001`: iterates until a value computed from the arrays converges")
out_of_scope("npbench_crc16", "npbench",
             "loops over the bytes' values and branches on `(cur_byte & 1) ^ (crc & 1)`")
out_of_scope("npbench_nussinov", "npbench",
             "Python `max()` of array elements and `if i < j - 1` tables built by value")
out_of_scope("npbench_spmv", "npbench",
             "slice bounds read from the CSR row pointer array: `A_col[A_row[i]:A_row[i+1]]`")
out_of_scope("npbench_mandelbrot2", "npbench",
             "compacts the live points with np.nonzero each iteration and stops when none is "
             "left (`if not len(Z)`)")
not_written("npbench_stockham_fft", "npbench",
             "not written: complex128 throughout (like contour_integral, which is a case)")
not_written("npbench_scattering_self_energies", "npbench",
             "not written: complex128 throughout (like contour_integral, which is a case)")
not_written("npbench_vadv", "npbench", "not written (time): a vertical tridiagonal stencil "
             "of the same idioms as deriche and adi")

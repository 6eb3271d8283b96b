/* field.h: the scalar type `real` as the prime field F_p, p = 2^61 - 1, for
 * extract/check/validate.py.
 *
 * The validator compiles the generated M.c (and M.cu, through the CUDA host emulation,
 * extract/emit/templates/cuda_host) as C++ with this header force-included and three lines
 * of the generated text replaced: `typedef float real;` in M.h becomes
 * `typedef pk_field::Fp real;`, and the vreal and hreal typedefs of M.c
 * (the two widths of lane kernels) become `typedef pk_field::Vec<M_LANES> vreal;` and
 * `typedef pk_field::Vec<M_HLANES> hreal;`. Everything else is compiled as emitted.
 *
 * + - * are those of F_p; a / b is a * b^-1 with 0^-1 = 0 (the inverse is b^(p-2)): scaledown
 * n (`x / n`), the batch mean, and recip (`1 / x`, recip 0 = 0). The other functions the
 * generated code calls are random functions (keyed hashes, the key set per trial), the ones
 * extract/check/field.py evaluates the dump with (same hashes, same keys):
 *   - exp(u) = L(-u)^-1 - 1, L a random function into [1, p): so the generated
 *     `logistic(x) = 1 / (1 + exp(-x))` is L(x), and exp and logistic are one random function;
 *   - log is a second random function G into [0, p), sqrt a third, S, erf a fourth, E
 *     (version 6); erf's derivative derf(x) = PK_2_SQRTPI exp(-x^2), with PK_2_SQRTPI (2/sqrt
 *     pi in the reals) a random constant c: derf is exp's random function at -x^2, times c;
 *   - `x <= 0` (the one comparison, in the generated relu and step) is a random predicate N(x):
 *     true at 0, a fair coin elsewhere; so relu(x) = N(x) ? 0 : x and step(x) = N(x) ? 0 : 1,
 *     and the generated fmax_(a, b) = `a - b <= 0 ? b : a` is N(a - b) ? b : a; an argmax
 *     loop's `top < v` (version 5) is !N(v - top).
 * A value outside [0, p) is "never written" (outputs are filled with 0xff bytes first) and
 * stays so through every operation, like a NaN; comparing one stops the program (exit status
 * 3). No other comparison of reals is defined: code that would use one does not compile. */
#ifndef PK_FIELD_H
#define PK_FIELD_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace pk_field {

/* the drivers are built at -O0 (extract/check/validate.py: optimization): the arithmetic that
 * every element of every kernel runs is inlined there too, which makes them several times faster
 * for a few percent more compile time */
#define PK_HOT inline __attribute__((always_inline))

constexpr std::uint64_t P = (std::uint64_t(1) << 61) - 1;
constexpr std::uint64_t BAD = ~std::uint64_t(0);

inline std::uint64_t key = 0;           /* the trial's key (of L; G and N use subkeys) */

/* splitmix64's finaliser (extract/check/field.py: _mix) */
inline std::uint64_t mix(std::uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* the key of the t-th random function: 1 for G (log), 2 for N (x <= 0), 3 for S (sqrt), 4 for E
 * (erf), 5 for the constant c of derf */
inline std::uint64_t subkey(int t)
{
    return mix(key + (std::uint64_t)t * 0x9E3779B97F4A7C15ULL);
}

PK_HOT std::uint64_t fold(unsigned __int128 x)
{
    std::uint64_t lo = (std::uint64_t)(x & P), hi = (std::uint64_t)(x >> 61);
    std::uint64_t r = lo + hi;          /* < 2^62 for x < 2^122 */
    r = (r & P) + (r >> 61);
    return r >= P ? r - P : r;
}

struct Fp {
    std::uint64_t v;                    /* a residue in [0, p), or not written (>= p) */

    Fp() = default;
    /* integer literals of the generated code (0, 1, the n of scaledown); no conversion from a
     * floating-point value */
    template <class I, class = typename std::enable_if<std::is_integral<I>::value>::type>
    constexpr Fp(I x) : v(x >= 0 ? (std::uint64_t)x % P : P - (std::uint64_t)(-(x + 1)) % P - 1) {}

    __attribute__((always_inline)) static Fp raw(std::uint64_t x) { Fp r; r.v = x; return r; }
    __attribute__((always_inline)) bool ok() const { return v < P; }
};

PK_HOT Fp operator+(Fp a, Fp b)
{
    if (!a.ok() || !b.ok()) return Fp::raw(BAD);
    std::uint64_t r = a.v + b.v;
    return Fp::raw(r >= P ? r - P : r);
}

PK_HOT Fp operator-(Fp a)
{
    if (!a.ok()) return a;
    return Fp::raw(a.v == 0 ? 0 : P - a.v);
}

PK_HOT Fp operator-(Fp a, Fp b) { return a + -b; }

PK_HOT Fp operator*(Fp a, Fp b)
{
    if (!a.ok() || !b.ok()) return Fp::raw(BAD);
    return Fp::raw(fold((unsigned __int128)a.v * b.v));
}

inline Fp power(Fp a, std::uint64_t e)
{
    Fp r = 1;
    for (; e; e >>= 1, a = a * a)
        if (e & 1) r = r * a;
    return r;
}

/* a^(p-2): the inverse, and 0 for 0 (recip 0 = 0; extract/check/field.py: recip) */
inline Fp inverse(Fp a)
{
    if (!a.ok()) return a;
    return power(a, P - 2);
}

inline Fp operator/(Fp a, Fp b)
{
    /* most divisors are small integers (scaledown n, the batch size): remember their inverses;
     * recip divides 1 by anything */
    static thread_local std::uint64_t cache_n[64], cache_inv[64];
    if (b.ok() && b.v != 0 && b.v < 4096) {
        unsigned slot = (unsigned)(b.v % 64);
        if (cache_n[slot] != b.v) { cache_inv[slot] = inverse(b).v; cache_n[slot] = b.v; }
        return a * Fp::raw(cache_inv[slot]);
    }
    return a * inverse(b);
}

PK_HOT Fp &operator+=(Fp &a, Fp b) { return a = a + b; }
PK_HOT Fp &operator-=(Fp &a, Fp b) { return a = a - b; }
PK_HOT Fp &operator*=(Fp &a, Fp b) { return a = a * b; }
inline Fp &operator/=(Fp &a, Fp b) { return a = a / b; }

/* L(x) = 1 + (splitmix64(x + key) mod (p - 1)), in [1, p) (extract/check/field.py: logistic) */
inline Fp L(Fp x)
{
    if (!x.ok()) return x;
    return Fp::raw(1 + mix(x.v + key) % (P - 1));
}

/* so that 1 / (1 + exp(-x)) = L(x) (extract/check/field.py: exp) */
inline Fp field_exp(Fp u) { return inverse(L(-u)) - 1; }

/* G(x) = splitmix64(x + subkey 1) mod p (extract/check/field.py: log) */
inline Fp field_log(Fp x)
{
    if (!x.ok()) return x;
    return Fp::raw(mix(x.v + subkey(1)) % P);
}

/* S(x) = splitmix64(x + subkey 3) mod p (extract/check/field.py: sqrt) */
inline Fp field_sqrt(Fp x)
{
    if (!x.ok()) return x;
    return Fp::raw(mix(x.v + subkey(3)) % P);
}

/* E(x) = splitmix64(x + subkey 4) mod p (extract/check/field.py: erf) */
inline Fp field_erf(Fp x)
{
    if (!x.ok()) return x;
    return Fp::raw(mix(x.v + subkey(4)) % P);
}

/* c = splitmix64(subkey 5) mod p, derf's 2/sqrt(pi) (extract/check/field.py: derf) */
inline Fp field_2_sqrtpi() { return Fp::raw(mix(subkey(5)) % P); }

/* N(x): x = 0, or the top bit of splitmix64(x + subkey 2) (extract/check/field.py: nonpositive) */
inline bool nonpositive(Fp x)
{
    if (!x.ok()) {
        std::fprintf(stderr, "pk_field: x <= 0 on a never-written value\n");
        std::_Exit(3);
    }
    return x.v == 0 || (mix(x.v + subkey(2)) >> 63) != 0;
}

/* the comparison of the generated relu, step and fmax_: x <= k is N(x - k) (k = 0 there) */
inline bool operator<=(Fp x, int k) { return nonpositive(x - Fp(k)); }

/* the comparison of an argmax loop (dump version 5), `top < v`: not N(v - top), the same
 * predicate on the difference (extract/check/field.py: _Eval.argmax) */
inline bool operator<(Fp a, Fp b) { return !nonpositive(b - a); }

/* vreal: N residues, one per lane; operators lane by lane, a scalar operand broadcast. The
 * generated vector helpers (vrelu, vstep, vfmax_) select by bit masks where reals are floats;
 * PK_LANEWISE makes them call the scalar helpers lane by lane instead. */
#define PK_LANEWISE 1
template <int N>
struct Vec {
    Fp v[N];
    __attribute__((always_inline)) Fp &operator[](int l) { return v[l]; }
    __attribute__((always_inline)) const Fp &operator[](int l) const { return v[l]; }
};

#define PK_VEC_OP(op)                                                                        \
    template <int N> inline Vec<N> operator op(const Vec<N> &a, const Vec<N> &b)             \
    { Vec<N> r; for (int l = 0; l < N; l++) r.v[l] = a.v[l] op b.v[l]; return r; }          \
    template <int N> inline Vec<N> operator op(const Vec<N> &a, Fp b)                        \
    { Vec<N> r; for (int l = 0; l < N; l++) r.v[l] = a.v[l] op b; return r; }               \
    template <int N> inline Vec<N> operator op(Fp a, const Vec<N> &b)                        \
    { Vec<N> r; for (int l = 0; l < N; l++) r.v[l] = a op b.v[l]; return r; }               \
    template <int N> inline Vec<N> operator op(const Vec<N> &a, int b)                       \
    { return a op Fp(b); }                                                                   \
    template <int N> inline Vec<N> operator op(int a, const Vec<N> &b)                       \
    { return Fp(a) op b; }                                                                   \
    template <int N> inline Vec<N> &operator op##=(Vec<N> &a, const Vec<N> &b)               \
    { return a = a op b; }                                                                   \
    template <int N> inline Vec<N> &operator op##=(Vec<N> &a, Fp b) { return a = a op b; }
PK_VEC_OP(+)
PK_VEC_OP(-)
PK_VEC_OP(*)
PK_VEC_OP(/)
#undef PK_VEC_OP

template <int N> inline Vec<N> operator-(const Vec<N> &a)
{
    Vec<N> r;
    for (int l = 0; l < N; l++) r.v[l] = -a.v[l];
    return r;
}

}  // namespace pk_field

using pk_field::Fp;

/* the generated code's exp / expf, log / logf and sqrt / sqrtf (C's are for float and double;
 * these take the field). An integer argument (`log(1 + 1)`, a folded constant) is the field
 * element: the int overloads win over <cmath>'s, which would compute a double. */
inline Fp exp(Fp u) { return pk_field::field_exp(u); }
inline Fp expf(Fp u) { return pk_field::field_exp(u); }
inline Fp log(Fp u) { return pk_field::field_log(u); }
inline Fp logf(Fp u) { return pk_field::field_log(u); }
inline Fp sqrt(Fp u) { return pk_field::field_sqrt(u); }
inline Fp sqrtf(Fp u) { return pk_field::field_sqrt(u); }
inline Fp exp(int k) { return pk_field::field_exp(Fp(k)); }
inline Fp expf(int k) { return pk_field::field_exp(Fp(k)); }
inline Fp log(int k) { return pk_field::field_log(Fp(k)); }
inline Fp logf(int k) { return pk_field::field_log(Fp(k)); }
inline Fp sqrt(int k) { return pk_field::field_sqrt(Fp(k)); }
inline Fp sqrtf(int k) { return pk_field::field_sqrt(Fp(k)); }
inline Fp erf(Fp u) { return pk_field::field_erf(u); }
inline Fp erff(Fp u) { return pk_field::field_erf(u); }
inline Fp erf(int k) { return pk_field::field_erf(Fp(k)); }
inline Fp erff(int k) { return pk_field::field_erf(Fp(k)); }
/* the generated derf's 2/sqrt(pi) (extract/emit/templates/c/model.c.j2) */
#define PK_2_SQRTPI (pk_field::field_2_sqrtpi())

#endif

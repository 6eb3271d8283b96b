/* field.h: the scalar type `real` as the prime field F_p, p = 2^61 - 1, for extract/validate.py.
 *
 * The validator compiles the generated M.c (and M.cu, through templates/cuda_host) as C++ with
 * this header force-included and two lines of the generated text replaced: `typedef float
 * real;` in M.h becomes `typedef pk_field::Fp real;`, and the vreal typedef of M.c becomes
 * `typedef pk_field::Vec<M_LANES> vreal;`. Everything else is compiled as emitted.
 *
 * + - * are those of F_p; x / n (scaledown, n an integer) is x * n^-1; exp is a random function
 * (a keyed hash, the key set per trial), chosen so that the generated
 * `logistic(x) = 1 / (1 + exp(-x))` equals L(x), an uninterpreted function of x with values in
 * [1, p): exp(u) = L(-u)^-1 - 1. extract/field.py computes the same L (same hash, same key).
 * A value outside [0, p) is "never written" (outputs are filled with 0xff bytes first) and
 * stays so through every operation, like a NaN. No comparison of reals is defined: code that
 * would compare them does not compile. */
#ifndef PK_FIELD_H
#define PK_FIELD_H

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace pk_field {

constexpr std::uint64_t P = (std::uint64_t(1) << 61) - 1;
constexpr std::uint64_t BAD = ~std::uint64_t(0);

inline std::uint64_t key = 0;           /* the trial's key of L */

inline std::uint64_t fold(unsigned __int128 x)
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

    static Fp raw(std::uint64_t x) { Fp r; r.v = x; return r; }
    bool ok() const { return v < P; }
};

inline Fp operator+(Fp a, Fp b)
{
    if (!a.ok() || !b.ok()) return Fp::raw(BAD);
    std::uint64_t r = a.v + b.v;
    return Fp::raw(r >= P ? r - P : r);
}

inline Fp operator-(Fp a)
{
    if (!a.ok()) return a;
    return Fp::raw(a.v == 0 ? 0 : P - a.v);
}

inline Fp operator-(Fp a, Fp b) { return a + -b; }

inline Fp operator*(Fp a, Fp b)
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

inline Fp inverse(Fp a)
{
    if (!a.ok() || a.v == 0) return Fp::raw(BAD);     /* no inverse: poisons the result */
    return power(a, P - 2);
}

inline Fp operator/(Fp a, Fp b)
{
    /* the divisors are small integers (scaledown n, the batch size): remember their inverses */
    static thread_local std::uint64_t cache_n[64], cache_inv[64];
    if (b.ok() && b.v != 0 && b.v < 4096) {
        unsigned slot = (unsigned)(b.v % 64);
        if (cache_n[slot] != b.v) { cache_inv[slot] = inverse(b).v; cache_n[slot] = b.v; }
        return a * Fp::raw(cache_inv[slot]);
    }
    return a * inverse(b);
}

inline Fp &operator+=(Fp &a, Fp b) { return a = a + b; }
inline Fp &operator-=(Fp &a, Fp b) { return a = a - b; }
inline Fp &operator*=(Fp &a, Fp b) { return a = a * b; }
inline Fp &operator/=(Fp &a, Fp b) { return a = a / b; }

/* L(x) = 1 + (splitmix64(x + key) mod (p - 1)), in [1, p) (extract/field.py: logistic) */
inline Fp L(Fp x)
{
    if (!x.ok()) return x;
    std::uint64_t z = x.v + key;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z = z ^ (z >> 31);
    return Fp::raw(1 + z % (P - 1));
}

/* so that 1 / (1 + exp(-x)) = L(x) */
inline Fp field_exp(Fp u) { return inverse(L(-u)) - 1; }

/* vreal: N residues, one per lane; operators lane by lane, a scalar operand broadcast */
template <int N>
struct Vec {
    Fp v[N];
    Fp &operator[](int l) { return v[l]; }
    const Fp &operator[](int l) const { return v[l]; }
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

/* the generated code's exp / expf (C's are for float and double; these take the field) */
inline Fp exp(Fp u) { return pk_field::field_exp(u); }
inline Fp expf(Fp u) { return pk_field::field_exp(u); }

#endif

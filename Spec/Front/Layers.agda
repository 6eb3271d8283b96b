{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The layer library: derived forms, each an expansion into core terms
-- (Spec.Front.Term) once the shapes of its arguments are known.
--
-- A layer checks the shapes of its arguments itself, so that a mistake
-- is reported in the layer's terms ("dense: the weight w2 has shape
-- 10×128, so the input must have shape 128; found 64"); the expansion
-- is then well shaped, and Spec.Front.Check elaborates it like any
-- other term.  In the expansions below, `x⁺ᵏ` is x moved under k binders.
--
--   dense(W, x)     for o : u . sum k : s . W[o][k] * x[k]     W : u×s, x : s
--   dense(W, x, b)  dense(W, x) + b                            b : u
--   conv(x, K)      for o : u . sum k : s . slide(x, k) * (for _ : w . K[o][k])
--                                     K : u×s, x : r, w = r − s + 1 (leafwise)
--   conv(x, K, b)   for o : u . conv… + (for _ : w . b[o])    b : u
--   avgpool(a, k[, s])  the mean of every k×k window at stride s
--                   (default k) of the last two dimensions, mapped over
--                   the others; at s = k:
--                   for i : M′×N′ . (sum j : k×k . block(a, i)[j]) / k²
--                   (see "Pooling" below for the crop and other strides)
--   maxpool(a, k[, s])  the maximum of every such window: for i : M′×N′ .
--                   max c : k×k . (the window at c)[i]
--   maxall(a)       max c : s . a[c], the largest element of a: the
--                   shift of a stable log-sum-exp
--   logsumexp(a)    m + log(sum j : s . exp(a[j] − m)), m = detach(maxall(a))
--   softmax_ce(z, y)  logsumexp(z) − sum j : n . y[j] * z[j] per row (the
--                   last dimension, n), mapped over the outer dimensions
--   log_softmax(z)  for i : n . z[i] − logsumexp(z) per row, likewise
--   (max c : s . b is MaxOver s b, the body at its argmax: a tie sends
--   the gradient to the first maximal position)
--   sqerr(r, t)     (sum j : s . ((r − t) * (r − t))[j]) / 2
--   tanh(a)         logistic(a + a) + logistic(a + a) − 1, elementwise:
--                   tanh a = 2σ(2a) − 1, with the core's operations (E
--                   has no tanh and no constant 2)
-- dense, conv, avgpool and sqerr are exactly the building blocks of the
-- paper's network (Spec.Model.CNN), so its model file elaborates to the
-- same chain.
------------------------------------------------------------------------
module Spec.Front.Layers where

open import Data.List using (List; []; _∷_)
open import Data.Maybe using (Maybe; just; nothing)
open import Data.Nat as ℕ using (ℕ; zero; suc; _*_; _+_)
open import Data.Nat.Show using () renaming (show to showℕ)
open import Data.Product using (Σ; _×_; _,_)
open import Data.String using (String; _++_)
open import Relation.Nullary using (yes; no)

open import Spec.Array.Base using (S; P; ι; _⊗_; unit)
open import Data.Fin using (inject+; fromℕ)
open import Data.List as List using ()
open import Data.List using (allFin) renaming ()
open import Data.Bool using (Bool; true; false; if_then_else_; _∧_; _∨_)
open import Data.Maybe using (fromMaybe)
open import Data.Nat using (_∸_)
open import Data.Nat.DivMod using (_/_)
import Data.Fin as Fin
open import Data.Product using (proj₁; proj₂)
open import Spec.Lang.Syntax using (IS; ar; ix; Fn)
open import Spec.Front.Shape
open import Spec.Front.Term
open import Spec.Front.Result

-- An argument of a layer: an expression (its term, its sort and shape,
-- and how to name it in a message: the name the user wrote, or
-- "argument k"), or a number.
data Arg : Set where
  expr : Tm → IS → String → Arg
  nat  : ℕ → String → Arg

private
  label : Arg → String
  label (expr _ _ l) = l
  label (nat _ l)    = l

  the : String → Arg → String
  the role a = "the " ++ role ++ " " ++ label a

  -- An array argument: its term and shape.
  array : String → String → Arg → Result (Tm × S)
  array layer role (expr t (ar s) _) = ok (t , s)
  array layer role a@(expr _ (ix s) _) =
    fail (layer ++ ": " ++ the role a ++ " is an index of shape " ++ show s ++ ", not an array")
  array layer role a@(nat n _) =
    fail (layer ++ ": " ++ the role a ++ " is the number " ++ showℕ n ++ ", not an array")

  number : String → String → Arg → Result ℕ
  number layer role (nat n _) = ok n
  number layer role a = fail (layer ++ ": " ++ the role a ++ " must be a whole number")

  -- An array argument of the given shape.
  shaped : String → String → S → Arg → Result Tm
  shaped layer role s a = array layer role a >>= λ { (t , s′) → match t s′ }
    where match : Tm → S → Result Tm
          match t s′ with s ≟ₛ s′
          ... | yes _ = ok t
          ... | no _  = fail (layer ++ ": " ++ the role a ++ " has shape " ++ show s′
                              ++ ", expected " ++ show s)

  -- A weight: its term, its outer part (the outputs) and the rest.
  weight : String → String → Arg → Result (Tm × S × S)
  weight layer role a = array layer role a >>= λ where
    (t , u ⊗ s) → ok (t , u , s)
    (_ , ι n)   → fail (layer ++ ": " ++ the role a ++ " has shape " ++ showℕ n
                        ++ "; it needs an outer dimension (one per output) before the input's")

  -- An optional bias of shape u: `plain` without one, `biased b` with.
  withBias : String → S → List Arg → Tm → (Tm → Tm) → Result Tm
  withBias layer u []       plain biased = ok plain
  withBias layer u (b ∷ []) plain biased = shaped layer "bias" u b >>= λ t → ok (biased t)
  withBias layer u _        plain biased = fail (layer ++ ": too many arguments")

  arity : String → String → Result Tm
  arity layer args = fail (layer ++ ": takes " ++ args)

------------------------------------------------------------------------
-- The layers

dense-term : S → S → Tm → Tm → Tm
dense-term u s W x = For u (Sum s (Mul (Sel (Sel (↑[ 2 ] W) (V 1)) (V 0)) (Sel (↑[ 2 ] x) (V 0))))

dense : List Arg → Result Tm
dense (W ∷ x ∷ rest) = do
  (w , u , s) ← weight "dense" "weight" W
  xt ← shaped′ w u s
  withBias "dense" u rest (dense-term u s w xt) (λ b → Add (dense-term u s w xt) b)
  where
    shaped′ : Tm → S → S → Result Tm
    shaped′ w u s = array "dense" "input" x >>= λ { (t , s′) → match t s′ }
      where match : Tm → S → Result Tm
            match t s′ with s ≟ₛ s′
            ... | yes _ = ok t
            ... | no _  = fail ("dense: " ++ the "weight" W ++ " has shape " ++ show (u ⊗ s)
                                ++ ", so the input must have shape " ++ show s ++ "; found "
                                ++ show s′)
dense _ = arity "dense" "a weight, an input and optionally a bias: dense(W, x) or dense(W, x, b)"

-- Under `for o : u`: the sum over the kernel positions k of the window
-- of x at k times the kernel's element K[o][k].
conv-sum : S → S → Tm → Tm → Tm
conv-sum s w x K = Sum s (Mul (Slide (V 0) (↑[ 2 ] x)) (For w (Sel (Sel (↑[ 3 ] K) (V 2)) (V 1))))

conv : List Arg → Result Tm
conv (X ∷ K ∷ rest) = do
  (k , u , s) ← weight "conv" "kernel" K
  (x , r) ← array "conv" "input" X
  (p , _) ← fits s r (minus? s r)
  let (w , _) = suc! p
  withBias "conv" u rest (For u (conv-sum s w x k))
                         (λ b → For u (Add (conv-sum s w x k) (For w (Sel (↑[ 2 ] b) (V 1)))))
  where
    fits : ∀ {A : Set} → S → S → Maybe A → Result A
    fits s r (just a) = ok a
    fits s r nothing  =
      fail ("conv: " ++ the "kernel" K ++ " has windows of shape " ++ show s ++ ", which do not "
            ++ "fit in " ++ the "input" X ++ " of shape " ++ show r
            ++ " (a window needs the input's dimensions and may be no larger)")
conv _ = arity "conv" "an input, a kernel and optionally a bias: conv(x, K) or conv(x, K, b)"

-- conv2d: a convolution over the last two dimensions, summed over the
-- channels, with optional zero padding P on each side of both:
--   x : H×W,   K : U×kh×kw      ↦ U×H′×W′
--   x : C×H×W, K : U×C×kh×kw    ↦ U×H′×W′      (H′ = H + 2P − kh + 1)
--   for o : U . sum c : C . sum k : kh×kw . slide(pad(x[c]), k) * (for _ : H′×W′ . K[o][c][k])
-- where pad(a) = backslide(a, (P, P)) places a at the constant offset
-- (P, P) in zeros of shape (H + 2P)×(W + 2P).

-- The constant (P, P) in a range of (2P+1)×(2P+1), and the padding.
centre : ℕ → Tm
centre P = Const (ι (suc (P + P)) ⊗ ι (suc (P + P))) (ι c ⊗ ι c)
  where c = inject+ P (fromℕ P)

padded : ℕ → Tm → Tm
padded zero    x = x
padded (suc P) x = Backslide (centre (suc P)) x

-- Sampling at a stride, cropping and zeros after an array (conv2d's
-- stride and the pooling layers).
private
  -- the constant (0, 0) in a range (suc m)×(suc n)
  origin : ℕ → ℕ → Tm
  origin m n = Const (ι (suc m) ⊗ ι (suc n)) (ι Fin.zero ⊗ ι Fin.zero)

  -- the first rows and columns of an M×N array: M′×N′ (M′ ≤ M, N′ ≤ N)
  crop : ℕ → ℕ → ℕ → ℕ → Tm → Tm
  crop M N M′ N′ a with M ∸ M′ | N ∸ N′
  ... | zero | zero = a
  ... | m    | n    = Slide (origin m n) a

  -- an L₁×L₂ array followed by zeros, to T₁×T₂ (T ≥ L)
  pad-end : ℕ → ℕ → ℕ → ℕ → Tm → Tm
  pad-end L₁ L₂ T₁ T₂ a with T₁ ∸ L₁ | T₂ ∸ L₂
  ... | zero | zero = a
  ... | m    | n    = Backslide (origin m n) a

  -- an H×W array b sampled at stride s = suc s′ (positions 0, s, 2s, …):
  -- for i : H′×W′ . block(pad-end(b), i)[0, 0], H′ = (H − 1)/s + 1
  sampled-shape : ℕ → ℕ → ℕ → S
  sampled-shape s′ H W = ι (suc ((H ∸ 1) / suc s′)) ⊗ ι (suc ((W ∸ 1) / suc s′))

  sample : ℕ → ℕ → ℕ → Tm → Tm
  sample s′ H W b =
    For (sampled-shape s′ H W)
        (Sel (Block (pad-end H W (suc s′ * suc ((H ∸ 1) / suc s′)) (suc s′ * suc ((W ∸ 1) / suc s′))
                             (↑[ 1 ] b)) (V 0))
             (origin s′ s′))

  -- The spatial shape after padding, and the output shape w.
  spatial : ℕ → S → S → Maybe S
  spatial P (ι kh ⊗ ι kw) (ι H ⊗ ι W) with minus? (ι kh ⊗ ι kw) (ι (H + 2 * P) ⊗ ι (W + 2 * P))
  ... | just (p , _) = just (proj₁ (suc! p))
  ... | nothing      = nothing
  spatial P _ _ = nothing

  -- The trailing options: a bias, a padding and a stride (after a
  -- padding), each may be left out; the stride is returned minus one.
  options : List Arg → Result (List Arg × ℕ × ℕ)
  options []                          = ok ([] , 0 , 0)
  options (nat P _ ∷ [])              = ok ([] , P , 0)
  options (nat P _ ∷ nat (suc s) _ ∷ []) = ok ([] , P , s)
  options (b ∷ [])                    = ok (b ∷ [] , 0 , 0)
  options (b ∷ nat P _ ∷ [])          = ok (b ∷ [] , P , 0)
  options (b ∷ nat P _ ∷ nat (suc s) _ ∷ []) = ok (b ∷ [] , P , s)
  options _ = fail ("conv2d: takes an input, a kernel, optionally a bias, optionally a padding "
                    ++ "and then a stride (at least 1): conv2d(x, K, b, 2) or conv2d(x, K, b, 1, 2)")

  -- a stride-1 convolution's output (shape w, under the channel's
  -- binder) sampled at stride s = suc s′, and the sampled shape
  strided : ℕ → S → Tm → Tm × S
  strided zero      w             t = t , w
  strided s′@(suc _) (ι H ⊗ ι W)   t = sample s′ H W t , sampled-shape s′ H W
  strided s′        w             t = t , w

conv2d : List Arg → Result Tm
conv2d (X ∷ K ∷ rest) = do
  (bs , P , s′) ← options rest
  (k , u , ks) ← weight "conv2d" "kernel" K
  (x , r) ← array "conv2d" "input" X
  body s′ P bs k u ks x r
  where
    too-big : ∀ {A : Set} → ℕ → S → S → Result A
    too-big P ks r = fail ("conv2d: " ++ the "kernel" K ++ " has windows of shape " ++ show ks
                           ++ ", which do not fit in " ++ the "input" X ++ " of shape " ++ show r
                           ++ (if P ℕ.≡ᵇ 0 then "" else " padded by " ++ showℕ P))
    body : ℕ → ℕ → List Arg → Tm → S → S → Tm → S → Result Tm
    -- one channel: x : H×W, K : U×kh×kw
    body s′ P bs k u ks@(ι _ ⊗ ι _) x r@(ι _ ⊗ ι _) with spatial P ks r
    ... | nothing = too-big P ks r
    ... | just w  =
      withBias "conv2d" u bs (For u (proj₁ (strided s′ w (term w))))
        (λ b → For u (Add (proj₁ (strided s′ w (term w)))
                          (For (proj₂ (strided s′ w (term w))) (Sel (↑[ 2 ] b) (V 1)))))
      where term : S → Tm
            term w = Sum ks (Mul (Slide (V 0) (padded P (↑[ 2 ] x)))
                                 (For w (Sel (Sel (↑[ 3 ] k) (V 2)) (V 1))))
    -- channels: x : C×H×W, K : U×C×kh×kw
    body s′ P bs k u (ι C′ ⊗ ks@(ι _ ⊗ ι _)) x (ι C ⊗ r@(ι _ ⊗ ι _)) with C′ ℕ.≟ C | spatial P ks r
    ... | no _  | _ = fail ("conv2d: " ++ the "kernel" K ++ " has " ++ showℕ C′ ++ " channels, "
                            ++ the "input" X ++ " has " ++ showℕ C)
    ... | yes _ | nothing = too-big P ks r
    ... | yes _ | just w  =
      withBias "conv2d" u bs (For u (proj₁ (strided s′ w (term w))))
        (λ b → For u (Add (proj₁ (strided s′ w (term w)))
                          (For (proj₂ (strided s′ w (term w))) (Sel (↑[ 2 ] b) (V 1)))))
      where term : S → Tm
            term w = Sum (ι C) (Sum ks (Mul (Slide (V 0) (padded P (Sel (↑[ 3 ] x) (V 1))))
                                            (For w (Sel (Sel (Sel (↑[ 4 ] k) (V 3)) (V 2)) (V 1)))))
    body s′ P bs k u ks x r =
      fail ("conv2d: takes an input H×W with a kernel U×kh×kw, or an input C×H×W with a kernel "
            ++ "U×C×kh×kw; found " ++ the "input" X ++ " of shape " ++ show r ++ " and "
            ++ the "kernel" K ++ " of shape " ++ show (u ⊗ ks))
conv2d _ = fail ("conv2d: takes an input, a kernel, optionally a bias, optionally a padding "
                 ++ "and then a stride: conv2d(x, K, b, 2) or conv2d(x, K, b, 1, 2)")

------------------------------------------------------------------------
-- Maxima: the max-reduction of E (Spec.Front.Term.MaxOver: the body at
-- its argmax, the first maximal position in row-major order, which is
-- where the gradient goes on a tie, as in PyTorch).  The term is the
-- size of its body whatever the number of positions.

maxall : List Arg → Result Tm
maxall (A ∷ []) = do
  (a , s) ← array "maxall" "input" A
  _ ← nonempty s
  ok (MaxOver s (Sel (↑[ 1 ] a) (V 0)))
  where nonempty : S → Result S
        nonempty s with pred? s
        ... | just _  = ok s
        ... | nothing = fail "maxall: the input has no elements"
maxall _ = arity "maxall" "one array: maxall(z)"

-- log Σⱼ exp aⱼ, shifted by a maximum that is not differentiated:
--   m + log (sum j : s . exp(a[j] − m)),  m = detach(max c : s . a[c])
-- (its gradient is the softmax of a: m's derivative is 0, as a
-- hand-written log-sum-exp does it).  Shape 1.
lse-term : S → Tm → Tm
lse-term s a = Add m (Un Fn.log (Sum s (Un Fn.exp (Add (Sel (↑[ 1 ] a) (V 0)) (Neg (↑[ 1 ] m))))))
  where m = Un Fn.detach (MaxOver s (Sel (↑[ 1 ] a) (V 0)))

logsumexp : List Arg → Result Tm
logsumexp (A ∷ []) = do
  (a , s) ← array "logsumexp" "input" A
  _ ← nonempty s
  ok (lse-term s a)
  where nonempty : S → Result S
        nonempty s with pred? s
        ... | just _  = ok s
        ... | nothing = fail "logsumexp: the input has no elements"
logsumexp _ = arity "logsumexp" "one array: logsumexp(z)"

-- Softmax over the last dimension, mapped over the others (one row per
-- position of the outer dimensions, as PyTorch's dim=-1), a row z of n
-- logits and a target row y:
--   softmax_ce(z, y)  lse(z) − sum j : n . y[j] * z[j]       (shape 1 per row)
--   log_softmax(z)    for i : n . z[i] − lse(z)               (shape n per row)
-- with lse the log-sum-exp above, so that the gradients are exactly
-- softmax(z) − y (for a target summing to 1) and δᵢⱼ − softmax(z)ⱼ.
-- A vector z gives one row: softmax_ce(z, y) is a scalar; z : T×n gives
-- T of them.  (logsumexp and maxall reduce over every element.)

-- f of the rows of the arrays as (all of one shape s), mapped over the outer dimensions.
rows : (ℕ → List Tm → Tm) → S → List Tm → Tm
rows f (ι n)   as = f n as
rows f (t ⊗ r) as = For t (rows f r (List.map (λ a → Sel (↑[ 1 ] a) (V 0)) as))

-- a row's length (its last dimension), which is never 0
row-length : String → S → Result ℕ
row-length layer (ι zero)    = fail (layer ++ ": the rows have no elements")
row-length layer (ι (suc n)) = ok (suc n)
row-length layer (t ⊗ r)     = row-length layer r

ce-row : ℕ → List Tm → Tm
ce-row n (z ∷ y ∷ _) = Add (lse-term (ι n) z) (Neg (Sum (ι n) (Mul (Sel (↑[ 1 ] y) (V 0)) (Sel (↑[ 1 ] z) (V 0)))))
ce-row n _           = Zero                    -- not reached: softmax_ce gives two rows

log-softmax-row : ℕ → List Tm → Tm
log-softmax-row n (z ∷ _) = For (ι n) (Add (Sel (↑[ 1 ] z) (V 0)) (Neg (↑[ 1 ] (lse-term (ι n) z))))
log-softmax-row n []      = Zero               -- not reached: log_softmax gives one row

softmax-ce : List Arg → Result Tm
softmax-ce (Z ∷ Y ∷ []) = do
  (z , s) ← array "softmax_ce" "logits" Z
  y ← shaped "softmax_ce" "target" s Y
  _ ← row-length "softmax_ce" s
  ok (rows ce-row s (z ∷ y ∷ []))
softmax-ce _ = arity "softmax_ce" "logits and a target of their shape: softmax_ce(z, y)"

log-softmax : List Arg → Result Tm
log-softmax (Z ∷ []) = do
  (z , s) ← array "log_softmax" "logits" Z
  _ ← row-length "log_softmax" s
  ok (rows log-softmax-row s (z ∷ []))
log-softmax _ = arity "log_softmax" "one array: log_softmax(z)"

------------------------------------------------------------------------
-- Pooling: k×k windows at stride s over the last two dimensions,
-- mapped over the others; windows that do not fit are dropped (floor
-- mode, as PyTorch and ONNX by default).  An M×N input gives
-- M′×N′ with M′ = (M − k) / s + 1.
--
--   stride = window (s = k): the k×k blocks of the input cropped to
--     (k·M′)×(k·N′): for i : M′×N′ . … block(crop(a), i)[c] …
--   otherwise: for each window position c, the window slide(a, c)
--     sampled every s positions: for i : M′×N′ . block(pad(slide(a, c)), i)[0]
--     (pad: zeros after it up to (s·M′)×(s·N′); never read)
-- maxpool takes the maximum over c (MaxOver: first maximal position on
-- ties), avgpool the sum over c divided by k².

data Pool : Set where
  maxᵖ avgᵖ : Pool

pool-name : Pool → String
pool-name maxᵖ = "maxpool"
pool-name avgᵖ = "avgpool"

-- the window k = suc k′ at stride s = suc s′ over an M×N array
pool2 : Pool → ℕ → ℕ → ℕ → ℕ → Tm → Result Tm
pool2 how k′ s′ M N a with (suc k′ ℕ.≤ᵇ M) ∧ (suc k′ ℕ.≤ᵇ N)
... | false = fail (pool-name how ++ ": the window " ++ showℕ (suc k′) ++ "×" ++ showℕ (suc k′)
                    ++ " does not fit in the last two dimensions " ++ show (ι M ⊗ ι N))
... | true  = ok (body how (k′ ℕ.≡ᵇ s′))
  where
    k s M′ N′ : ℕ
    k  = suc k′
    s  = suc s′
    M′ = suc ((M ∸ k) / s)
    N′ = suc ((N ∸ k) / s)
    out = ι M′ ⊗ ι N′
    win = ι k ⊗ ι k
    cropped : Tm
    cropped = crop M N (k * M′) (k * N′) a
    -- the window b (an (M−k+1)×(N−k+1) array) sampled every s
    sampled : Tm → Tm
    sampled = sample s′ (suc (M ∸ k)) (suc (N ∸ k))
    body : Pool → Bool → Tm
    body maxᵖ true  = For out (MaxOver win (Sel (Block (↑[ 2 ] cropped) (V 1)) (V 0)))
    body avgᵖ true  = For out (Scale (k * k) (Sum win (Sel (Block (↑[ 2 ] cropped) (V 1)) (V 0))))
    body maxᵖ false = For out (MaxOver win (Sel (sampled (Slide (V 0) (↑[ 2 ] a))) (V 1)))
    body avgᵖ false = Scale (k * k) (Sum win (sampled (Slide (V 0) (↑[ 1 ] a))))

poolₙ : Pool → ℕ → ℕ → S → Tm → Result Tm
poolₙ how (suc k′) (suc s′) (ι M ⊗ ι N) a = pool2 how k′ s′ M N a
poolₙ how k s (t ⊗ (p ⊗ q)) a = poolₙ how k s (p ⊗ q) (Sel (↑[ 1 ] a) (V 0)) >>= λ b → ok (For t b)
poolₙ how k s (ι M ⊗ ι N) a = fail (pool-name how ++ ": the window size and the stride must be at least 1")
poolₙ how k s sh a = fail (pool-name how ++ ": needs an array of at least two dimensions, found shape " ++ show sh)

pooling : Pool → List Arg → Result Tm
pooling how (A ∷ K ∷ rest) = do
  (a , sh) ← array (pool-name how) "input" A
  k ← number (pool-name how) "window size" K
  s ← stride rest k
  positive k >>= λ _ → positive s >>= λ _ → poolₙ how k s sh a
  where positive : ℕ → Result ℕ
        positive zero    = fail (pool-name how ++ ": the window size and the stride must be at least 1")
        positive (suc n) = ok (suc n)
        stride : List Arg → ℕ → Result ℕ
        stride []      k = ok k
        stride (S ∷ []) k = number (pool-name how) "stride" S
        stride _       k = fail (pool-name how ++ ": takes an array, a window size and optionally a stride: "
                                 ++ pool-name how ++ "(a, 2) or " ++ pool-name how ++ "(a, 3, 2)")
pooling how _ = arity (pool-name how) ("an array, a window size and optionally a stride: "
                                       ++ pool-name how ++ "(a, 2) or " ++ pool-name how ++ "(a, 3, 2)")

maxpool avgpool : List Arg → Result Tm
maxpool = pooling maxᵖ
avgpool = pooling avgᵖ

sqerr : List Arg → Result Tm
sqerr (R ∷ T ∷ []) = do
  (r , s) ← array "sqerr" "prediction" R
  t ← shaped "sqerr" "target" s T
  let d = Add (↑[ 1 ] r) (Neg (↑[ 1 ] t))
  ok (Scale 2 (Sum s (Sel (Mul d d) (V 0))))
sqerr _ = arity "sqerr" "a prediction and a target: sqerr(r, t)"

-- Whether a term holds a sum (a dense, conv or avgpool layer's, or one written out;
-- a maxpool or maxall is a max-reduction, which tanh repeats at four times its cost).
has-sum : Tm → Bool
has-sum (Sum _ _)           = true
has-sum (For _ t)           = has-sum t
has-sum (Tile _ t)          = has-sum t
has-sum (Sel a i)           = has-sum a ∨ has-sum i
has-sum (Block a i)         = has-sum a ∨ has-sum i
has-sum (ZeroBut i j a)     = has-sum i ∨ has-sum j ∨ has-sum a
has-sum (Slide i a)         = has-sum i ∨ has-sum a
has-sum (Backslide i a)     = has-sum i ∨ has-sum a
has-sum (Un _ a)            = has-sum a
has-sum (Neg a)             = has-sum a
has-sum (Add a b)           = has-sum a ∨ has-sum b
has-sum (Mul a b)           = has-sum a ∨ has-sum b
has-sum (Max a b)           = has-sum a ∨ has-sum b
has-sum (Scale _ a)         = has-sum a
has-sum (Div _ i)           = has-sum i
has-sum (Mod _ i)           = has-sum i
has-sum (IxMinus i j t)     = has-sum i ∨ has-sum j ∨ has-sum t
has-sum (IxMinusʳ i j t)    = has-sum i ∨ has-sum j ∨ has-sum t
has-sum (Argmax _ t)        = has-sum t
has-sum _                   = false

-- tanh reads its input four times: a sum in it would be computed four times per element
-- (and more in the gradient), so it must be a binding of its own.
tanh : List Arg → Result Tm
tanh (A ∷ []) = do
  (a , _) ← array "tanh" "input" A
  if has-sum a
    then fail ("tanh: its input holds a sum (a dense, conv or avgpool layer, or a sum "
               ++ "written out), which tanh, 2σ(2a) − 1, would compute four times: bind it "
               ++ "to a name first (z = …; h = tanh(z))")
    else ok (Add (Add (Logistic (Add a a)) (Logistic (Add a a))) (Neg One))
tanh _ = arity "tanh" "one array: tanh(a)"

-- The layer of a name, if it is one.
layer : String → Maybe (List Arg → Result Tm)
layer "dense"   = just dense
layer "conv"    = just conv
layer "conv2d"  = just conv2d
layer "avgpool" = just avgpool
layer "maxpool" = just maxpool
layer "maxall"  = just maxall
layer "logsumexp" = just logsumexp
layer "softmax_ce"  = just softmax-ce
layer "log_softmax" = just log-softmax
layer "sqerr"   = just sqerr
layer "tanh"    = just tanh
layer _         = nothing

layer-names : List String
layer-names = "dense" ∷ "conv" ∷ "conv2d" ∷ "avgpool" ∷ "maxpool" ∷ "maxall" ∷ "logsumexp"
  ∷ "softmax_ce" ∷ "log_softmax" ∷ "sqerr" ∷ "tanh" ∷ []

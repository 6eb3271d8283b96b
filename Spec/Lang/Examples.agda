{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The paper's examples, checked by normalisation (refl):
--
--   * the gradient of the dot product with respect to a, before and
--     after optimisation (paper §6.1);
--   * the rewrites of §7.1.1, one by one;
--   * zero padding (backslide at a constant index), its gradient and
--     their optimised forms;
--   * the gradients of the elementwise functions (exp, log, recip,
--     relu, step, logistic);
--   * the chain x = a·b, y = x·x and its gradients (paper §6.3);
--   * the optimisation goal on the CNN of Spec.Model.CNN (temp-free);
--   * a few evaluations with Float scalars.
------------------------------------------------------------------------
module Spec.Lang.Examples where

open import Data.Float as Float using (Float)
open import Data.Fin using (Fin) renaming (zero to fzero; suc to fsuc)
open import Data.List using (List; []; _∷_)
open import Data.Product using (_,_)
open import Data.Unit using (tt)
open import Relation.Binary.PropositionalEquality using (_≡_; refl)

open import Spec.Array.Base using (S; ι; _⊗_; unit; P; Ar; _+_≈_; suc_≈_; _*_≈_)
open import Spec.Scalar.Float using (float)
open import Spec.Lang.Syntax
open import Spec.Lang.Subst
open import Spec.Lang.AD
open import Spec.Lang.Opt
open import Spec.Lang.Chain
open import Spec.Lang.Eval float using (⟦_⟧; Env)
import Spec.Model.CNN as CNN
open import Data.Bool using (true; _∧_)
open import Data.List using (all)

private
  variable
    Γ : Ctx
    s : S

------------------------------------------------------------------------
-- Dot product (§6.1)

dotp : E Γ (ar s) → E Γ (ar s) → E Γ (ar unit)
dotp a b = Sum λ i → sels (↑ a) i ⊠ sels (↑ b) i

C : Ctx
C = ε ▹ ar unit ▹ ar (ι 5) ▹ ar (ι 5)

seed a b : E C (ar _)
seed = var v₂
a    = var v₁
b    = var v₀

-- the gradient of dotp a b with respect to a
∂a : E C (ar (ι 5))
∂a = lookupE {C} (∇₀ (dotp a b) seed) v₁

non-opt : ∂a ≡ (Sum λ i → zero ⊞ Imapₛ λ j → zero-but j (↑ i) (↑↑ seed ⊠ sels (↑↑ b) (↑ i)))
              ⊞ zero
non-opt = refl

-- three passes are enough, and opt* stops by itself
with-opt₃ : opt (opt (opt ∂a)) ≡ Imapₛ λ i → ↑ seed ⊠ sels (↑ b) i
with-opt₃ = refl

with-opt : optimise ∂a ≡ Imapₛ λ i → ↑ seed ⊠ sels (↑ b) i
with-opt = refl

-- and symmetrically for b
∂b : E C (ar (ι 5))
∂b = lookupE {C} (∇₀ (dotp a b) seed) v₀

_ : optimise ∂b ≡ Imapₛ λ i → ↑ seed ⊠ sels (↑ a) i
_ = refl

------------------------------------------------------------------------
-- The rewrites of §7.1.1: no blocked or windowed temporary survives a
-- selection.

module _ where
  -- a : ar 4, j : ix 2, k : ix 3 (windows of 3 in 4 at offsets < 2)
  Cs : Ctx
  Cs = ε ▹ ar (ι 4) ▹ ix (ι 2) ▹ ix (ι 3)

  _ : optimise {Γ = Cs} (sels (slide (var v₁) ι (var v₂) ι) (var v₀))
    ≡ sels (var v₂) (ix-plus (var v₁) (var v₀) ι ι)
  _ = refl

  -- a : ar 3, j : ix 2, k : ix 4 (a placed at offset j, read at k)
  Cb : Ctx
  Cb = ε ▹ ar (ι 3) ▹ ix (ι 2) ▹ ix (ι 4)

  _ : optimise {Γ = Cb} (sels (backslide (var v₁) (var v₂) ι ι) (var v₀))
    ≡ ix-minus (var v₀) (var v₁) ι ι (sels (var v₃) (var v₀))
  _ = refl

  -- Σ_t [k = j ⊕ t] a[t]  =  a[k − j] where defined
  _ : optimise {Γ = Cb} (Sum λ t → zero-but (var v₁) (ix-plus (var v₂) t ι ι) (sels (var v₃) t))
    ≡ ix-minus (var v₀) (var v₁) ι ι (sels (var v₃) (var v₀))
  _ = refl

  -- a : ar (2 ⊗ 2) read as a blocked 4-vector at i : ix 4
  Ck : Ctx
  Ck = ε ▹ ar (ι 2 ⊗ ι 2) ▹ ix (ι 4)

  _ : optimise {Γ = Ck} (sels (imapb ι (sel (var v₂) (var v₀))) (var v₀))
    ≡ sels (sel (var v₁) (div ι (var v₀))) (mod ι (var v₀))
  _ = refl

  -- scaledown moves under a sum
  _ : optimise {Γ = Ck} (scaledown 4 (Sum λ i → sel (var v₂) i))
    ≡ Sum λ i → scaledown 4 (sel (var v₂) i)
  _ = refl

------------------------------------------------------------------------
-- Padding with zeros: backslide at a constant offset.  A 3-vector a
-- placed at offset 1 in a 5-vector (windows of 3 at offsets < 3) is
-- a padded by one zero on each side.

module _ where
  -- seed : ar 5, a : ar 3
  Cp : Ctx
  Cp = ε ▹ ar (ι 5) ▹ ar (ι 3)

  one₃ : P (ι 3)
  one₃ = ι (fsuc fzero)

  pad : E Cp (ar (ι 5))
  pad = backslide (ix-const one₃) (var v₀) ι ι

  -- η: the padded vector is a scalar map over an index subtraction
  _ : optimise pad
    ≡ Imapₛ λ k → ix-minus k (ix-const one₃) ι ι (sels (var v₂) (var v₀))
  _ = refl

  -- its gradient with respect to a reads the seed at the constant offset
  ∂pad : E Cp (ar (ι 3))
  ∂pad = lookupE {Cp} (∇₀ pad (var v₁)) v₀

  _ : ∂pad ≡ zero ⊞ slide (ix-const one₃) ι (var v₁) ι
  _ = refl

  _ : optimise ∂pad ≡ Imapₛ λ j → sels (var v₂) (ix-plus (ix-const one₃) j ι ι)
  _ = refl

  _ : temp-free (optimise pad) ∧ temp-free (optimise ∂pad) ≡ true
  _ = refl

------------------------------------------------------------------------
-- Elementwise functions: ∇ multiplies the seed by the declared
-- derivative (exp′ = exp, log′ = recip, recip′ = −recip², sqrt′ =
-- recip (sqrt + sqrt), relu′ = step, step′ = 0; max: step (a − b) and 1 − step (a − b)) and opt
-- drops the zero it started from.

module _ where
  -- seed : ar 5, x : ar 5
  Cu : Ctx
  Cu = ε ▹ ar (ι 5) ▹ ar (ι 5)

  sᵤ x : E Cu (ar (ι 5))
  sᵤ = var v₁
  x  = var v₀

  -- the gradient of un f x with respect to x, seed sᵤ
  ∂un : Fn → E Cu (ar (ι 5))
  ∂un f = lookupE {Cu} (∇₀ (un f x) sᵤ) v₀

  _ : ∂un Fn.exp ≡ zero ⊞ sᵤ ⊠ un Fn.exp x
  _ = refl

  _ : optimise (∂un Fn.exp) ≡ sᵤ ⊠ un Fn.exp x
  _ = refl

  _ : optimise (∂un Fn.log) ≡ sᵤ ⊠ un Fn.recip x
  _ = refl

  _ : optimise (∂un Fn.recip) ≡ sᵤ ⊠ minus (un Fn.recip x ⊠ un Fn.recip x)
  _ = refl

  _ : optimise (∂un Fn.relu) ≡ sᵤ ⊠ un Fn.step x
  _ = refl

  -- sqrt′ = recip (sqrt + sqrt): E has no constant 2
  _ : optimise (∂un Fn.sqrt) ≡ sᵤ ⊠ un Fn.recip (un Fn.sqrt x ⊞ un Fn.sqrt x)
  _ = refl

  -- erf′ = derf (E has no constant 2/√π: derf is a primitive), and
  -- derf′ = −((x + x) · derf x)
  _ : optimise (∂un Fn.erf) ≡ sᵤ ⊠ un Fn.derf x
  _ = refl

  _ : optimise (∂un Fn.derf) ≡ sᵤ ⊠ minus ((x ⊞ x) ⊠ un Fn.derf x)
  _ = refl

  -- step adds nothing
  _ : ∂un Fn.step ≡ zero
  _ = refl

  -- logistic keeps the paper's (s · σ) · (1 − σ)
  _ : optimise (∂un Fn.logistic) ≡ sᵤ ⊠ logistic x ⊠ (one ⊞ minus (logistic x))
  _ = refl

  -- log (x · x): the chain rule through a product
  _ : optimise (lookupE {Cu} (∇₀ (un Fn.log (x ⊠ x)) sᵤ) v₀)
    ≡ sᵤ ⊠ un Fn.recip (x ⊠ x) ⊠ x ⊞ sᵤ ⊠ un Fn.recip (x ⊠ x) ⊠ x
  _ = refl

  -- a selection goes through an elementwise function
  _ : optimise {Γ = Cu ▹ ix (ι 5)} (sels (un Fn.exp (↑ x)) (var v₀))
    ≡ un Fn.exp (sels (↑ x) (var v₀))
  _ = refl

  -- max: the seed times step (a − b) goes to a, times 1 − step (a − b)
  -- to b (so a tie goes to b)
  _ : optimise (lookupE {Cu} (∇₀ (x ⊔ sᵤ) one) v₀) ≡ un Fn.step (x ⊞ minus sᵤ)
  _ = refl

  _ : optimise (lookupE {Cu} (∇₀ (x ⊔ sᵤ) one) v₁) ≡ one ⊞ minus (un Fn.step (x ⊞ minus sᵤ))
  _ = refl

  -- no rule of ⊞ or ⊠ folds a max (max 0 x is not x), and a selection
  -- goes through it
  _ : optimise (zero ⊔ x) ≡ zero ⊔ x
  _ = refl

  _ : optimise (one ⊠ (zero ⊔ x)) ≡ zero ⊔ x
  _ = refl

  _ : optimise {Γ = Cu ▹ ix (ι 5)} (sels (↑ x ⊔ ↑ sᵤ) (var v₀))
    ≡ sels (↑ x) (var v₀) ⊔ sels (↑ sᵤ) (var v₀)
  _ = refl

------------------------------------------------------------------------
-- The max-reduction and the stop-gradient: the maximum of x is x at its
-- argmax (opt substitutes the argmax into the body), its gradient is
-- the seed at the argmax, and detach passes no gradient.

module _ where
  Cm : Ctx
  Cm = ε ▹ ar (ι 5)

  xm : E Cm (ar (ι 5))
  xm = var v₀

  am : E Cm (ix (ι 5))
  am = argmax ι (sels (↑ xm) (var v₀))

  mx : E Cm (ar unit)
  mx = maxs ι (sels (↑ xm) (var v₀))

  _ : optimise mx ≡ sels xm am
  _ = refl

  _ : optimise (lookupE {Cm} (∇₀ mx one) v₀) ≡ imaps (zero-but (var v₀) (↑ am) one)
  _ = refl

  _ : lookupE {Cm} (∇₀ (un Fn.detach xm) (var v₀)) v₀ ≡ zero
  _ = refl

  -- over Float: the first of the two largest elements (3 at 1 and 3)
  ρm : Env Cm
  ρm = tt , λ { (ι i) → v i }
    where v : Fin 5 → Float
          v fzero = 1.0
          v (fsuc fzero) = 3.0
          v (fsuc (fsuc fzero)) = 2.0
          v (fsuc (fsuc (fsuc fzero))) = 3.0
          v (fsuc (fsuc (fsuc (fsuc fzero)))) = 0.5

  _ : ⟦ am ⟧ ρm ≡ ι (fsuc fzero)
  _ = refl

  _ : ⟦ mx ⟧ ρm (ι fzero) ≡ 3.0
  _ = refl

------------------------------------------------------------------------
-- The chain x = a · b, y = x · x (§6.3)

chain-ctx : ChainCtx
chain-ctx = ε ▸ ("a" , ι 5) ▸ ("b" , ι 5)

test-chain : Chain (ε ▹ ar (ι 5) ▹ ar (ι 5) ▹ ar (ι 5) ▹ ar (ι 5) ▹ ar (ι 5) ▹ ar (ι 5))
test-chain = ε ((tt , "a") , "b")
             ▹ ("x" , var v₁ ⊠ var v₀)       -- scope: a b
             ▹ ("y" , var v₀ ⊠ var v₀)       -- scope: a b d_x x

_ : ce-split chain-ctx ≡ (ε ▹ ar (ι 5) ▹ ar (ι 5) , ((tt , "a") , "b"))
_ = refl

-- full scope: a b d_x x d_y y  =  v₅ v₄ v₃ v₂ v₁ v₀
_ : chain-grads-opt test-chain one ≡
      gradient "d_y" "y" (ι 5) one
    ∷ gradient "d_x" "x" (ι 5) (var v₁ ⊠ var v₂ ⊞ var v₁ ⊠ var v₂)
    ∷ gradient "d_a" "a" (ι 5) (var v₃ ⊠ var v₄)
    ∷ gradient "d_b" "b" (ι 5) (var v₃ ⊠ var v₅)
    ∷ []
_ = refl

-- before optimisation each entry still carries the zero it started from
_ : chain-grads₀ test-chain one ≡
      gradient "d_y" "y" (ι 5) (zero ⊞ one)
    ∷ gradient "d_x" "x" (ι 5) (zero ⊞ var v₁ ⊠ var v₂ ⊞ var v₁ ⊠ var v₂)
    ∷ gradient "d_a" "a" (ι 5) (zero ⊞ var v₃ ⊠ var v₄)
    ∷ gradient "d_b" "b" (ι 5) (zero ⊞ var v₃ ⊠ var v₅)
    ∷ []
_ = refl

------------------------------------------------------------------------
-- The optimisation goal on the paper's CNN (Spec.Model.CNN): after opt*
-- no gradient reads or builds a blocked or windowed array.

_ : all (λ g → temp-free (Gradient.expr g)) (chain-grads-opt CNN.chain CNN.seed) ≡ true
_ = refl

------------------------------------------------------------------------
-- Evaluation with Float scalars

private
  vec : Float → Float → Float → Float → Float → Ar (ι 5) Float
  vec x₀ x₁ x₂ x₃ x₄ (ι fzero) = x₀
  vec x₀ x₁ x₂ x₃ x₄ (ι (fsuc fzero)) = x₁
  vec x₀ x₁ x₂ x₃ x₄ (ι (fsuc (fsuc fzero))) = x₂
  vec x₀ x₁ x₂ x₃ x₄ (ι (fsuc (fsuc (fsuc fzero)))) = x₃
  vec x₀ x₁ x₂ x₃ x₄ (ι (fsuc (fsuc (fsuc (fsuc fzero))))) = x₄

  ρ : Env C
  ρ = ((tt , λ _ → 2.0) , vec 1.0 2.0 3.0 4.0 5.0) , vec 1.0 0.0 1.0 0.0 1.0

  ι0 : P unit
  ι0 = ι fzero

  ι2 : P (ι 5)
  ι2 = ι (fsuc (fsuc fzero))

-- a · b = 1 + 3 + 5
_ : ⟦ dotp a b ⟧ ρ ι0 ≡ 9.0
_ = refl

-- ∂a = seed · b, at position 2: 2 · 1
_ : ⟦ ∂a ⟧ ρ ι2 ≡ 2.0
_ = refl

_ : ⟦ optimise ∂a ⟧ ρ ι2 ≡ 2.0
_ = refl

-- ∂b = seed · a, at position 2: 2 · 3
_ : ⟦ optimise ∂b ⟧ ρ ι2 ≡ 6.0
_ = refl

-- the padded vector (1, 2, 3) is (0, 1, 2, 3, 0), before and after opt
private
  ρp : Env Cp
  ρp = (tt , vec 5.0 6.0 7.0 8.0 9.0) , λ { (ι fzero)               → 1.0
                                           ; (ι (fsuc fzero))        → 2.0
                                           ; (ι (fsuc (fsuc fzero))) → 3.0 }

  ι′ : Fin 5 → P (ι 5)
  ι′ = ι

_ : ⟦ pad ⟧ ρp (ι′ fzero) ≡ 0.0
_ = refl

_ : ⟦ pad ⟧ ρp (ι′ (fsuc (fsuc fzero))) ≡ 2.0
_ = refl

_ : ⟦ optimise pad ⟧ ρp (ι′ (fsuc fzero)) ≡ 1.0
_ = refl

_ : ⟦ optimise pad ⟧ ρp (ι′ (fsuc (fsuc (fsuc fzero)))) ≡ 3.0
_ = refl

_ : ⟦ optimise pad ⟧ ρp (ι′ (fsuc (fsuc (fsuc (fsuc fzero))))) ≡ 0.0
_ = refl

-- the gradient at a₀ is the seed at 1
_ : ⟦ optimise ∂pad ⟧ ρp (ι fzero) ≡ 6.0
_ = refl

-- elementwise functions in Float: x = (−1, 0, 2, 1, 4), seed 3
private
  ρu : Env Cu
  ρu = (tt , λ _ → 3.0) , vec (Float.- 1.0) 0.0 2.0 1.0 4.0

  at : Fin 5 → P (ι 5)
  at = ι

_ : ⟦ un Fn.relu x ⟧ ρu (at fzero) ≡ 0.0
_ = refl

_ : ⟦ un Fn.relu x ⟧ ρu (at (fsuc (fsuc fzero))) ≡ 2.0
_ = refl

-- relu′ 0 = step 0 = 0: the gradient of relu at x = 0 is 0
_ : ⟦ optimise (∂un Fn.relu) ⟧ ρu (at (fsuc fzero)) ≡ 0.0
_ = refl

_ : ⟦ optimise (∂un Fn.relu) ⟧ ρu (at (fsuc (fsuc fzero))) ≡ 3.0
_ = refl

-- exp 0 = 1, log 1 = 0, recip 4 = 1/4
_ : ⟦ un Fn.exp x ⟧ ρu (at (fsuc fzero)) ≡ 1.0
_ = refl

_ : ⟦ un Fn.log x ⟧ ρu (at (fsuc (fsuc (fsuc fzero)))) ≡ 0.0
_ = refl

_ : ⟦ un Fn.recip x ⟧ ρu (at (fsuc (fsuc (fsuc (fsuc fzero))))) ≡ 0.25
_ = refl

-- the gradient of log at 2 with seed 3: 3 / 2; of recip at 2: −3 / 4
_ : ⟦ optimise (∂un Fn.log) ⟧ ρu (at (fsuc (fsuc fzero))) ≡ 1.5
_ = refl

_ : ⟦ optimise (∂un Fn.recip) ⟧ ρu (at (fsuc (fsuc fzero))) ≡ Float.- 0.75
_ = refl

-- the gradient of exp at 0 with seed 3: 3
_ : ⟦ optimise (∂un Fn.exp) ⟧ ρu (at (fsuc fzero)) ≡ 3.0
_ = refl

-- sqrt 4 = 2, and its gradient at 4 with seed 3: 3 / (2 + 2)
_ : ⟦ un Fn.sqrt x ⟧ ρu (at (fsuc (fsuc (fsuc (fsuc fzero))))) ≡ 2.0
_ = refl

_ : ⟦ optimise (∂un Fn.sqrt) ⟧ ρu (at (fsuc (fsuc (fsuc (fsuc fzero))))) ≡ 0.75
_ = refl

-- the gradient of erf at 0 with seed 3: 3 · derf 0 = 3 · 2/√π (the
-- double nearest 2/√π); Float does not compute erf itself (NaN:
-- Spec.Scalar.Float)
_ : ⟦ optimise (∂un Fn.erf) ⟧ ρu (at (fsuc fzero)) ≡ 3.0 Float.* 1.1283791670955126
_ = refl

_ : Float.isNaN (⟦ un Fn.erf x ⟧ ρu (at (fsuc fzero))) ≡ true
_ = refl

------------------------------------------------------------------------
-- Tries by level (Spec.Lang.Trie) and the sparse reverse pass

import Data.Nat as N
import Data.Nat.Binary as B
import Spec.Lang.Trie as Trie
import Spec.Lang.Chain.Sparse as Sparse

_ : Trie.at 0 (Trie.modify 0 (B.fromℕ 5) N.suc Trie.leaf) (B.fromℕ 5) ≡ 1
_ = refl

_ : Trie.at 0 (Trie.modify 0 (B.fromℕ 5) N.suc Trie.leaf) (B.fromℕ 4) ≡ 0
_ = refl

-- the list Main prints for the test chain, computed both ways
_ : Sparse.chain-grads-optˢ test-chain one ≡ chain-grads-opt test-chain one
_ = refl

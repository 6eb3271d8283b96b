{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- The elaborator: a core term (Spec.Front.Term) in a context of shapes
-- becomes an intrinsically shaped expression of E, or a message saying
-- which operation found which shapes where it expected others.
--
-- Bidirectional, as in PLFA's "Inference": `infer` finds the sort and
-- shape of a term from its parts; `check` makes a term of a wanted
-- sort and shape, which 0 and 1 need (their shape is whatever the
-- context wants) and elementwise operations pass on to their operands.
-- (Add is inferred, as it is also index addition, unless both operands
-- are numbers.)  Every shape relation a
-- constructor needs is decided by Spec.Front.Shape.
--
-- A variable's sort comes from σ : Sorts Γ, the sorts by level
-- (Spec.Front.Sorts.lookup: O(log n), not a walk of Γ to the index).
--
-- Faithful by construction: every result carries the proof that the
-- expression erases back to the term (⌊ e ⌋ ≡ t); Spec.Theorems states
-- this as `infer-faithful`.
------------------------------------------------------------------------
module Spec.Front.Check where

open import Data.Bool using (Bool; true; false; _∧_; if_then_else_)
open import Data.Maybe using (Maybe; just; nothing)
open import Data.Nat using (ℕ; zero; suc)
open import Data.Product using (Σ; _,_)
open import Data.String using (String; _++_)
open import Relation.Binary.PropositionalEquality using (_≡_; refl; cong; cong₂)
open import Relation.Nullary using (yes; no)

open import Spec.Array.Base using (S; ι; _⊗_; unit)
open import Spec.Lang.Syntax hiding (Sum)
open import Spec.Front.Shape
open import Spec.Front.Term
open import Spec.Front.Result
open import Spec.Front.Sorts using (Sorts; _▸ˢ_; lookup)

private
  variable
    Γ         : Ctx
    a b i j t : Tm

------------------------------------------------------------------------
-- What elaboration returns

-- An expression of some sort and shape that erases to t.
Elab : Ctx → Tm → Set
Elab Γ t = Σ IS λ is → Σ (E Γ is) λ e → ⌊ e ⌋ ≡ t

-- An expression of the given sort and shape that erases to t.
Chk : Ctx → IS → Tm → Set
Chk Γ is t = Σ (E Γ is) λ e → ⌊ e ⌋ ≡ t

-- An array or an index, of some shape.
Arr Ix : Ctx → Tm → Set
Arr Γ t = Σ S λ s → Chk Γ (ar s) t
Ix  Γ t = Σ S λ s → Chk Γ (ix s) t

describe : IS → String
describe (ar s) = "an array of shape " ++ show s
describe (ix s) = "an index of shape " ++ show s

private
  array : String → Elab Γ t → Result (Arr Γ t)
  array op (ar s , e , eq) = ok (s , e , eq)
  array op (ix s , _ , _)  = fail (op ++ ": expected an array, found " ++ describe (ix s))

  index : String → Elab Γ t → Result (Ix Γ t)
  index op (ix s , e , eq) = ok (s , e , eq)
  index op (ar s , _ , _)  = fail (op ++ ": expected an index, found " ++ describe (ar s))

  need : ∀ {A : Set} → String → Maybe A → Result A
  need m (just x) = ok x
  need m nothing  = fail m

------------------------------------------------------------------------
-- The nodes whose constructor depends on the shapes found

private
  for-node : ∀ s p (e : E (Γ ▹ ix s) (ar p)) → ⌊ e ⌋ ≡ t → Elab Γ (For s t)
  for-node s p e eq with p ≟ₛ unit
  ... | yes refl = ar s , imaps e , cong (For s) eq
  ... | no _     = ar (s ⊗ p) , imap e , cong (For s) eq

  sel-outer : ∀ t s (ea : E Γ (ar t)) (ei : E Γ (ix s)) → ⌊ ea ⌋ ≡ a → ⌊ ei ⌋ ≡ i
            → Result (Elab Γ (Sel a i))
  sel-outer (t₁ ⊗ t₂) s ea ei pa pi with s ≟ₛ t₁
  ... | yes refl = ok (ar t₂ , sel ea ei , cong₂ Sel pa pi)
  ... | no _     = fail ("selection: an array of shape " ++ show (t₁ ⊗ t₂)
                         ++ " takes an index of shape " ++ show (t₁ ⊗ t₂) ++ " or "
                         ++ show t₁ ++ ", found an index of shape " ++ show s)
  sel-outer (ι n) s ea ei pa pi =
    fail ("selection: an array of shape " ++ show (ι n) ++ " takes an index of shape "
          ++ show (ι n) ++ ", found an index of shape " ++ show s)

  sel-node : ∀ t s (ea : E Γ (ar t)) (ei : E Γ (ix s)) → ⌊ ea ⌋ ≡ a → ⌊ ei ⌋ ≡ i
           → Result (Elab Γ (Sel a i))
  sel-node t s ea ei pa pi with s ≟ₛ t
  ... | yes refl = ok (ar unit , sels ea ei , cong₂ Sel pa pi)
  ... | no _     = sel-outer t s ea ei pa pi

  same : ∀ is js (e : E Γ js) → ⌊ e ⌋ ≡ t → Result (Chk Γ is t)
  same (ar s) (ar s′) e eq with s ≟ₛ s′
  ... | yes refl = ok (e , eq)
  ... | no _     = fail ("expected " ++ describe (ar s) ++ ", found " ++ describe (ar s′))
  same (ix s) (ix s′) e eq with s ≟ₛ s′
  ... | yes refl = ok (e , eq)
  ... | no _     = fail ("expected " ++ describe (ix s) ++ ", found " ++ describe (ix s′))
  same is js _ _ = fail ("expected " ++ describe is ++ ", found " ++ describe js)

  -- The operator a user wrote: a − b is a + (−b).
  plus-name : Tm → String
  plus-name (Neg _) = "-"
  plus-name _       = "+"

  -- Whether a term's shape comes from where it is used: 0 and 1, and elementwise forms of
  -- them (infer fails on them; check passes the wanted shape down).
  open? : Tm → Bool
  open? Zero        = true
  open? One         = true
  open? (Neg a)     = open? a
  open? (Scale _ a) = open? a
  open? (Un _ a)    = open? a
  open? (Add a b)   = open? a ∧ open? b
  open? (Mul a b)   = open? a ∧ open? b
  open? (Max a b)   = open? a ∧ open? b
  open? _           = false

  operands : String → S → S → String
  operands op s s′ = op ++ ": the left operand has shape " ++ show s ++ ", the right one "
                     ++ show s′

------------------------------------------------------------------------
-- Inference and checking

infer : (Γ : Ctx) → Sorts Γ → (t : Tm) → Result (Elab Γ t)
check : (Γ : Ctx) → Sorts Γ → (is : IS) (t : Tm) → Result (Chk Γ is t)
-- An operand b of an elementwise operator, of the shape s of the other: its own shape if it
-- has one (`differ` of it where it is not s), else checked against s. Each operand is
-- elaborated once: an elementwise chain is checked in linear time.
operand : (Γ : Ctx) → Sorts Γ → (s : S) (b : Tm) → (S → String) → String → Result (Chk Γ (ar s) b)

infer Γ σ (V n) with lookup Γ σ n
... | just (is , x , eq) = ok (is , var x , cong V eq)
... | nothing            = fail "a variable out of scope"
infer Γ σ Zero = fail "the shape of 0 is not known here: use 0 where it is (as in x + 0)"
infer Γ σ One  =
  fail "the shape of a number is not known here: use it beside an array (as in x * 1 or x + 0.5)"
infer Γ σ (For s t) = do
  (p , e , eq) ← infer (Γ ▹ ix s) (σ ▸ˢ ix s) t >>= array "for"
  ok (for-node s p e eq)
infer Γ σ (Sum s t) = do
  (p , e , eq) ← infer (Γ ▹ ix s) (σ ▸ˢ ix s) t >>= array "sum"
  ok (ar p , sum e , cong (Sum s) eq)
infer Γ σ (Tile s t) = do
  (p , e , eq) ← infer (Γ ▹ ix s) (σ ▸ˢ ix s) t >>= array "tile"
  (q , m) ← need ("tile: blocks of shape " ++ show p ++ " do not fit an index of shape "
                  ++ show s) (times? s p)
  ok (ar q , imapb m e , cong (Tile s) eq)
infer Γ σ (Sel a i) = do
  (t , ea , pa) ← infer Γ σ a >>= array "selection"
  (s , ei , pi) ← infer Γ σ i >>= index "selection"
  sel-node t s ea ei pa pi
infer Γ σ (Block a i) = do
  (q , ea , pa) ← infer Γ σ a >>= array "block"
  (s , ei , pi) ← infer Γ σ i >>= index "block"
  (p , m) ← need ("block: an array of shape " ++ show q ++ " does not split into "
                  ++ show s ++ " equal blocks") (quot? s q)
  ok (ar p , selb m ea ei , cong₂ Block pa pi)
infer Γ σ (ZeroBut i j a) = do
  (s , ei , pi) ← infer Γ σ i >>= index "zerobut"
  (ej , pj) ← check Γ σ (ix s) j at "zerobut: the two indices differ: "
  (p , ea , pa) ← infer Γ σ a >>= array "zerobut"
  ok (ar p , zero-but ei ej ea , cong₃ pi pj pa)
  where cong₃ : ∀ {i′ j′ a′} → i′ ≡ i → j′ ≡ j → a′ ≡ a → ZeroBut i′ j′ a′ ≡ ZeroBut i j a
        cong₃ refl refl refl = refl
infer Γ σ (Slide i a) = do
  (s , ei , pi) ← infer Γ σ i >>= index "slide"
  (r , ea , pa) ← infer Γ σ a >>= array "slide"
  (p , sp) ← need ("slide: a window at an index of shape " ++ show s ++ " does not fit in an "
                   ++ "array of shape " ++ show r) (minus? s r)
  let (u , su) = suc! p
  ok (ar u , slide ei sp ea su , cong₂ Slide pi pa)
infer Γ σ (Backslide i a) = do
  (s , ei , pi) ← infer Γ σ i >>= index "backslide"
  (u , ea , pa) ← infer Γ σ a >>= array "backslide"
  (p , su) ← need ("backslide: an array of shape " ++ show u ++ " has an empty dimension")
                  (pred? u)
  (r , sp) ← need ("backslide: an index of shape " ++ show s ++ " and an array of shape "
                   ++ show u ++ " differ in structure") (plus? s p)
  ok (ar r , backslide ei ea su sp , cong₂ Backslide pi pa)
infer Γ σ (Argmax s t) = do
  (e , eq) ← check (Γ ▹ ix s) (σ ▸ˢ ix s) (ar unit) t at "max: the body must be a scalar (shape 1): "
  (p , w) ← need ("max: over an index of shape " ++ show s ++ ", which has no positions") (pred? s)
  ok (ix s , argmax w e , cong (Argmax s) eq)
infer Γ σ (Un f a) = do
  (s , e , eq) ← infer Γ σ a >>= array (fn-name f)
  ok (ar s , un f e , cong (Un f) eq)
infer Γ σ (Neg a) = do
  (s , e , eq) ← infer Γ σ a >>= array "-"
  ok (ar s , minus e , cong Neg eq)
infer Γ σ (Scale n a) = do
  (s , e , eq) ← infer Γ σ a >>= array "/"
  ok (ar s , scaledown n e , cong (Scale n) eq)
infer Γ σ (Add a b) = if open? a then right else left
  where
    left : Result (Elab Γ (Add a b))
    left = infer Γ σ a >>= λ
      { (ar s , ea , pa) → do
          (eb , pb) ← operand Γ σ s b (operands (plus-name b) s) (plus-name b ++ ": ")
          ok (ar s , bin plus ea eb , cong₂ Add pa pb)
      ; (ix s , ei , pi) → do
          (u , ej , pj) ← infer Γ σ b >>= index "+ of indices"
          (p , su) ← need "+ of indices: the right index has an empty dimension" (pred? u)
          (r , sp) ← need ("+ of indices: indices of shapes " ++ show s ++ " and " ++ show u
                           ++ " differ in structure") (plus? s p)
          ok (ix r , ix-plus ei ej su sp , cong₂ Add pi pj)
      }
    right : Result (Elab Γ (Add a b))
    right = do
      (s , eb , pb) ← infer Γ σ b >>= array (plus-name b)
      (ea , pa) ← operand Γ σ s a (λ s′ → operands (plus-name b) s′ s) (plus-name b ++ ": ")
      ok (ar s , bin plus ea eb , cong₂ Add pa pb)
infer Γ σ (Mul a b) = if open? a then right else left
  where
    left right : Result (Elab Γ (Mul a b))
    left = do
      (s , ea , pa) ← infer Γ σ a >>= array "*"
      (eb , pb) ← operand Γ σ s b (operands "*" s) "*: "
      ok (ar s , bin mul ea eb , cong₂ Mul pa pb)
    right = do
      (s , eb , pb) ← infer Γ σ b >>= array "*"
      (ea , pa) ← operand Γ σ s a (λ s′ → operands "*" s′ s) "*: "
      ok (ar s , bin mul ea eb , cong₂ Mul pa pb)
infer Γ σ (Max a b) = if open? a then right else left
  where
    left right : Result (Elab Γ (Max a b))
    left = do
      (s , ea , pa) ← infer Γ σ a >>= array "max"
      (eb , pb) ← operand Γ σ s b (operands "max" s) "max: "
      ok (ar s , bin max ea eb , cong₂ Max pa pb)
    right = do
      (s , eb , pb) ← infer Γ σ b >>= array "max"
      (ea , pa) ← operand Γ σ s a (λ s′ → operands "max" s′ s) "max: "
      ok (ar s , bin max ea eb , cong₂ Max pa pb)
infer Γ σ (Const s i) = ok (ix s , ix-const i , refl)
infer Γ σ (Div p i) = do
  (q , ei , pi) ← infer Γ σ i >>= index "div"
  (s , m) ← need ("div: an index of shape " ++ show q ++ " does not split into blocks of shape "
                  ++ show p) (quotˡ? p q)
  ok (ix s , div m ei , cong (Div p) pi)
infer Γ σ (Mod p i) = do
  (q , ei , pi) ← infer Γ σ i >>= index "mod"
  (s , m) ← need ("mod: an index of shape " ++ show q ++ " does not split into blocks of shape "
                  ++ show p) (quotˡ? p q)
  ok (ix p , mod m ei , cong (Mod p) pi)
infer Γ σ (IxMinus i j t) = do
  (r , ei , pi) ← infer Γ σ i >>= index "ixminus"
  (s , ej , pj) ← infer Γ σ j >>= index "ixminus"
  (p , sp) ← need ("ixminus: an index of shape " ++ show s ++ " does not fit in one of shape "
                   ++ show r) (minus? s r)
  let (u , su) = suc! p
  (q , e , eq) ← infer (Γ ▹ ix u) (σ ▸ˢ ix u) t >>= array "ixminus"
  ok (ar q , ix-minus ei ej sp su e , cong₃ pi pj eq)
  where cong₃ : ∀ {i′ j′ t′} → i′ ≡ i → j′ ≡ j → t′ ≡ t → IxMinus i′ j′ t′ ≡ IxMinus i j t
        cong₃ refl refl refl = refl
infer Γ σ (IxMinusʳ i j t) = do
  (r , ei , pi) ← infer Γ σ i >>= index "ixminusr"
  (u , ej , pj) ← infer Γ σ j >>= index "ixminusr"
  (p , su) ← need "ixminusr: the right index has an empty dimension" (pred? u)
  (s , sp) ← need ("ixminusr: an index of shape " ++ show u ++ " does not fit in one of shape "
                   ++ show r) (minusʳ? p r)
  (q , e , eq) ← infer (Γ ▹ ix s) (σ ▸ˢ ix s) t >>= array "ixminusr"
  ok (ar q , ix-minusᵣ ei ej sp su e , cong₃ pi pj eq)
  where cong₃ : ∀ {i′ j′ t′} → i′ ≡ i → j′ ≡ j → t′ ≡ t → IxMinusʳ i′ j′ t′ ≡ IxMinusʳ i j t
        cong₃ refl refl refl = refl

check Γ σ (ar s) Zero = ok (zero , refl)
check Γ σ (ar s) One  = ok (one , refl)
-- elementwise operations pass the wanted shape on, so 0 and 1 may sit anywhere under them
check Γ σ (ar s) (Neg a) = check Γ σ (ar s) a >>= λ { (e , eq) → ok (minus e , cong Neg eq) }
check Γ σ (ar s) (Scale n a) =
  check Γ σ (ar s) a >>= λ { (e , eq) → ok (scaledown n e , cong (Scale n) eq) }
check Γ σ (ar s) (Un f a) =
  check Γ σ (ar s) a >>= λ { (e , eq) → ok (un f e , cong (Un f) eq) }
check Γ σ (ar s) (Mul a b) = do
  (ea , pa) ← check Γ σ (ar s) a
  (eb , pb) ← check Γ σ (ar s) b
  ok (bin mul ea eb , cong₂ Mul pa pb)
check Γ σ (ar s) (Max a b) = do
  (ea , pa) ← check Γ σ (ar s) a
  (eb , pb) ← check Γ σ (ar s) b
  ok (bin max ea eb , cong₂ Max pa pb)
-- a sum of numbers (1 + 1, and the decimals of Spec.Front.Literal): an array's addition
check Γ σ (ar s) (Add a b) =
  if open? a ∧ open? b
  then (check Γ σ (ar s) a >>= λ { (ea , pa) → check Γ σ (ar s) b >>= λ { (eb , pb) →
        ok (bin plus ea eb , cong₂ Add pa pb) } })
  else (infer Γ σ (Add a b) >>= λ { (js , e , eq) → same (ar s) js e eq })
check Γ σ is t = infer Γ σ t >>= λ { (js , e , eq) → same is js e eq }

operand Γ σ s b differ pre with open? b
... | true  = check Γ σ (ar s) b at pre
... | false with infer Γ σ b
...   | fail m = fail (pre ++ m)
...   | ok (ix s′ , _ , _) = fail (pre ++ "expected an array of shape " ++ show s
                                   ++ ", found an index of shape " ++ show s′)
...   | ok (ar s′ , e , eq) with s′ ≟ₛ s
...     | yes refl = ok (e , eq)
...     | no _     = fail (differ s′)

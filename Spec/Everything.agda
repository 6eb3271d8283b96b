{-# OPTIONS --safe --without-K #-}
------------------------------------------------------------------------
-- Every checked module of the specification; `make proofs` checks this.
-- (Spec.Main, the executable entry point, is not --safe and is checked
-- by `make dump`, which compiles it.)
------------------------------------------------------------------------
module Spec.Everything where

import Spec.Array.Base
import Spec.Array.Index
import Spec.Array.Slide
import Spec.Array.Block
import Spec.Scalar
import Spec.Scalar.Float
import Spec.CNN.Array
import Spec.Lang.Syntax

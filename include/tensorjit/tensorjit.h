// The umbrella header of tensorjit's public C++ API.
#pragma once
#include "tensorjit/autograd.h"
#include "tensorjit/config.h"
#include "tensorjit/device.h"
#include "tensorjit/dtype.h"
#include "tensorjit/error.h"
#include "tensorjit/functions.h"
#include "tensorjit/indexing.h"
#include "tensorjit/ir.h"
#include "tensorjit/optim.h"
#include "tensorjit/options.h"
#include "tensorjit/scalar.h"
#include "tensorjit/tensor.h"

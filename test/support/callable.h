// API functions as plain callables. Each takes a defaulted tj::Caller last, which taking its
// address drops; a lambda keeps the default (and the caller's line: this test's).
#pragma once

#define TJ_FN(f) [](const auto&... a) -> tj::Tensor { return f(a...); }
#define TJ_METHOD(m) [](auto& self) -> decltype(self.m()) { return self.m(); }

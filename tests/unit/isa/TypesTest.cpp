//===- TypesTest.cpp - Element type enumerations
//---------------------------===//
//
// Reference: the code tables of isa/docs/bm1684x.md 4.3 (PREC), 5.3 (GDMA formats),
// 7.2 (DATA_TYPE_T) and 8.1 (ROUND_MODE).
//
//===----------------------------------------------------------------------===//
#include "tpu/isa/Types.h"

#include <gtest/gtest.h>

using namespace tpu::isa;

TEST(Types, PrecCodes) {
  struct Row {
    unsigned code;
    const char *name;
    unsigned bits;
    bool isFloat;
  };
  const Row rows[] = {{0, "INT8", 8, false},   {1, "FP16", 16, true},
                      {2, "FP32", 32, true},   {3, "INT16", 16, false},
                      {4, "INT32", 32, false}, {5, "BF16", 16, true},
                      {6, "INT4", 4, false}};
  for (const Row &r : rows) {
    auto p = precFromCode(r.code);
    ASSERT_TRUE(p.has_value()) << r.code;
    EXPECT_STREQ(precName(*p), r.name);
    EXPECT_EQ(precBits(*p), r.bits);
    EXPECT_EQ(isFloat(*p), r.isFloat) << r.name;
    EXPECT_EQ(static_cast<unsigned>(gdmaFormatFor(*p)), r.code);
    EXPECT_EQ(gdmaFormatBits(gdmaFormatFor(*p)), r.bits);
  }
  EXPECT_EQ(precBytes(Prec::Int4), 1u);
  EXPECT_EQ(precBytes(Prec::Bf16), 2u);
  EXPECT_FALSE(precFromCode(7).has_value()); // FP8 is not a BM1684X code
  EXPECT_STREQ(gdmaFormatName(GdmaFormat::Bf16), "BFLOAT16");
  EXPECT_FALSE(gdmaFormatFromCode(7).has_value());
  EXPECT_EQ(gdmaFormatFromCode(2), GdmaFormat::Fp32);
}

TEST(Types, DataTypeAndRoundModeCodes) {
  EXPECT_EQ(dataTypeFromCode(0), DataType::F32);
  EXPECT_EQ(dataTypeFromCode(8), DataType::BF16);
  EXPECT_EQ(dataTypeFromCode(13), DataType::F8E4M3);
  EXPECT_FALSE(dataTypeFromCode(14).has_value());
  EXPECT_STREQ(dataTypeName(DataType::UInt8), "UINT8");
  EXPECT_EQ(dataTypeBits(DataType::UInt4), 4u);
  EXPECT_EQ(dataTypeBits(DataType::FP20), 20u);
  EXPECT_EQ(dataTypeBits(DataType::Int32), 32u);
  EXPECT_EQ(roundModeFromCode(0), RoundMode::HalfToEven);
  EXPECT_EQ(roundModeFromCode(6), RoundMode::HalfDown);
  EXPECT_FALSE(roundModeFromCode(7).has_value());
  EXPECT_STREQ(roundModeName(RoundMode::HalfAwayFromZero),
               "HALF_AWAY_FROM_ZERO");
}

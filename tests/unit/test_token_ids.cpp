// Token id lists as --ids and --ids-file give them: whitespace or commas between ids, and a comma
// only between two ids.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/token_ids.hpp"

namespace {

std::string error_of(const std::string& text, bool allow_empty = false) {
    auto ids = stormo::parse_token_ids(text, "--ids", allow_empty);
    EXPECT_FALSE(ids.has_value()) << text;
    return ids ? std::string() : ids.error().message;
}

TEST(TokenIds, CommasAndWhitespaceSeparate) {
    const std::vector<int32_t> want{1, 2, 3, 4};
    for (const char* text : {"1,2,3,4", "1 2 3 4", "1, 2,\n3 4\n", " 1\t2\r\n3 ,4 ", "1\n,2,3,4"})
        EXPECT_EQ(stormo::parse_token_ids(text, "--ids").value_or(std::vector<int32_t>{}), want) << text;
    EXPECT_TRUE(stormo::parse_token_ids(" \n", "--ids", /*allow_empty=*/true).value().empty());
}

TEST(TokenIds, AnEmptyIdBetweenCommasIsRefusedByPosition) {
    EXPECT_EQ(error_of("1,,2"), "--ids: id 2 is empty: nothing between the commas at bytes 2 and 3");
    EXPECT_EQ(error_of("1, ,2"), "--ids: id 2 is empty: nothing between the commas at bytes 2 and 4");
    EXPECT_EQ(error_of(",1"), "--ids: id 1 is empty: the list starts with a comma (byte 1)");
    EXPECT_EQ(error_of("1,2,"), "--ids: id 3 is empty: the list ends with a comma (byte 4)");
    EXPECT_EQ(error_of("1 2,\n3 4,\n"), "--ids: id 5 is empty: the list ends with a comma (byte 9)");
    EXPECT_EQ(error_of(","), "--ids: id 1 is empty: the list starts with a comma (byte 1)");
    // Detokenizing nothing is allowed; a lone comma is not nothing.
    EXPECT_EQ(error_of(" , ", /*allow_empty=*/true), "--ids: id 1 is empty: the list starts with a comma (byte 2)");
    EXPECT_EQ(error_of(" "), "--ids: no token ids");
}

TEST(TokenIds, ABadIdIsQuotedEscapedAndCut) {
    EXPECT_EQ(error_of("1,x,3"), "--ids: \"x\" is not a token id");
    EXPECT_EQ(error_of("1 -2"), "--ids: \"-2\" is not a token id");
    EXPECT_EQ(error_of("2147483648"), "--ids: \"2147483648\" is not a token id");
    EXPECT_EQ(error_of("1 \x1b[2J"), "--ids: \"\\x1b[2J\" is not a token id");
    const std::string long_token(100000, '7');
    const std::string m = error_of("1 " + long_token + "x");
    EXPECT_LT(m.size(), 200u) << m;
}

}  // namespace

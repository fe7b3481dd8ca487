/**
 * A hand-written sample in the form of ops-nn's op_api unit tests (aclcheck's tests read it).
 * TEST_F(l2_sample_test, inside_a_block_comment) { this is not a test }
 */
#include "gtest/gtest.h"
#include "op_api_ut_common/op_api_ut.h"
#include "op_api_ut_common/tensor_desc.h"

using namespace std;

class l2_sample_test : public testing::Test {
protected:
    static void SetUpTestCase() { cout << "SetUp" << endl; }
};

TEST_F(l2_sample_test, plain_success)
{
    auto grad_output_tensor_desc = TensorDesc({2, 2, 1, 1, 1}, ACL_FLOAT, ACL_FORMAT_NCDHW).ValueRange(-50, 50);
    auto input_tensor_desc = TensorDesc({2, 2, 2, 2, 2}, ACL_FLOAT, ACL_FORMAT_NCDHW).ValueRange(-1, 1);
    auto output_tensor = TensorDesc({2, 2, 2, 2, 2}, ACL_FLOAT, ACL_FORMAT_NCDHW).Precision(0.0001, 0.0001);
    auto ut = OP_API_UT(aclnnAdaptiveAvgPool3dBackward, INPUT(grad_output_tensor_desc, input_tensor_desc),
                        OUTPUT(output_tensor));
    uint64_t workspace_size = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspace_size);
    EXPECT_EQ(aclRet, ACL_SUCCESS);  // the first phase accepts it
}

TEST_F(l2_sample_test, dtype_variable_out_differs)
{
    aclDataType dtype = ACL_FLOAT16;
    auto grad = TensorDesc({2, 1, 1, 1}, dtype, ACL_FORMAT_ND).ValueRange(0.5, 2.5f);
    auto self = TensorDesc({2, 3, 3, 3}, dtype, ACL_FORMAT_ND);
    auto out = TensorDesc({2, 3, 3, 1}, ACL_FLOAT, ACL_FORMAT_NCL);
    auto ut = OP_API_UT(aclnnAdaptiveAvgPool3dBackward, INPUT(grad, self), OUTPUT(out));
    uint64_t workspace_size = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspace_size);
    EXPECT_EQ(aclRet, ACLNN_ERR_PARAM_INVALID);
}

TEST_F(l2_sample_test, strided_self)
{
    auto grad = TensorDesc({1, 2, 1, 1, 1}, ACL_FLOAT, ACL_FORMAT_ND);
    auto self = TensorDesc({1, 2, 2, 3, 2}, ACL_FLOAT, ACL_FORMAT_ND, {24, 12, 1, 2, 6}, 4, {1, 2, 2, 2, 8})
                    .ValueRange(-2, 2);
    auto out = TensorDesc({1, 2, 2, 3, 2}, ACL_FLOAT, ACL_FORMAT_ND, {12, 6, 3, 1, 1}, 0, {24});
    auto ut = OP_API_UT(aclnnAdaptiveAvgPool3dBackward, INPUT(grad, self), OUTPUT(out));
    uint64_t workspace_size = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspace_size);
    EXPECT_EQ(ACL_SUCCESS, aclRet);
}

TEST_F(l2_sample_test, value_vector)
{
    auto grad = TensorDesc({1, 1, 1, 1, 2}, ACL_FLOAT, ACL_FORMAT_ND).Value(vector<float>{1.0f, -1});
    auto self = TensorDesc({1, 1, 1, 2, 2}, ACL_FLOAT, ACL_FORMAT_ND)
                    .Value(vector<double>{0.35, 2, /* an inline comment */ -0.5e1,
                                          3.25});
    auto out = TensorDesc({1, 1, 1, 2, 2}, ACL_FLOAT, ACL_FORMAT_ND);
    auto ut = OP_API_UT(aclnnAdaptiveAvgPool3dBackward, INPUT(grad, self), OUTPUT(out));
    uint64_t workspace_size = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspace_size);
    ASSERT_EQ(aclRet, 0);
    ut.TestPrecision();
}

TEST_F(l2_sample_test, self_nullptr)
{
    auto grad = TensorDesc({2, 2, 1, 1, 1}, ACL_FLOAT, ACL_FORMAT_ND).ValueRange(-50, 50);
    auto self = nullptr;
    auto out = TensorDesc({2, 2, 1, 1, 1}, ACL_FLOAT, ACL_FORMAT_ND);
    auto ut = OP_API_UT(aclnnAdaptiveAvgPool3dBackward, INPUT(grad, self), OUTPUT(out));
    uint64_t workspace_size = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspace_size);
    EXPECT_EQ(aclRet, ACLNN_ERR_PARAM_NULLPTR);
}

TEST_F(l2_sample_test,
       grad_output_nullptr_inline)
{
    auto ut = OP_API_UT(aclnnAdaptiveAvgPool3dBackward,
                        INPUT(nullptr, TensorDesc({2, 2, 2, 2, 2}, ACL_BF16, ACL_FORMAT_NDHWC)),
                        OUTPUT(TensorDesc({2, 2, 2, 2, 2}, ACL_BF16, ACL_FORMAT_NDHWC)));
    uint64_t workspace_size = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspace_size);
    EXPECT_EQ(aclRet, 161001);
}

TEST_F(l2_sample_test, negative_dim)
{
    auto grad = TensorDesc({2, 2, -1, 1, 1}, ACL_FLOAT, ACL_FORMAT_ND);
    auto self = TensorDesc({2, 2, 0, 2, 2}, ACL_FLOAT, ACL_FORMAT_ND);
    auto out = TensorDesc({2, 2, 0, 2, 2}, ACL_FLOAT, ACL_FORMAT_ND);
    auto ut = OP_API_UT(aclnnAdaptiveAvgPool3dBackward, INPUT(grad, self), OUTPUT(out));
    uint64_t workspace_size = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspace_size);
    EXPECT_EQ(aclRet, ACLNN_ERR_PARAM_INVALID);
}

TEST_F(l2_sample_test, complex_dtype)
{
    aclDataType dtype = ACL_COMPLEX128;
    auto grad = TensorDesc({2, 1, 1, 1}, dtype, ACL_FORMAT_ND);
    auto self = TensorDesc({2, 2, 2, 2}, dtype, ACL_FORMAT_ND);
    auto out = TensorDesc({2, 2, 2, 2}, dtype, ACL_FORMAT_ND);
    auto ut = OP_API_UT(aclnnAdaptiveAvgPool3dBackward, INPUT(grad, self), OUTPUT(out));
    uint64_t workspace_size = 0;
    aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspace_size);
    EXPECT_EQ(aclRet, ACLNN_ERR_PARAM_INVALID);
}

// TEST_F(l2_sample_test, commented_out) {
//     EXPECT_EQ(aclRet, ACL_SUCCESS);
// }

TEST_F(l2_sample_test, precision_only)
{
    auto grad = TensorDesc({2, 2, 1, 1, 1}, ACL_FLOAT, ACL_FORMAT_ND);
    auto self = TensorDesc({2, 2, 2, 2, 2}, ACL_FLOAT, ACL_FORMAT_ND);
    auto out = TensorDesc({2, 2, 2, 2, 2}, ACL_FLOAT, ACL_FORMAT_ND).Precision(0.1, 0.1);
    auto ut = OP_API_UT(aclnnAdaptiveAvgPool3dBackward, INPUT(grad, self), OUTPUT(out));
    ut.TestPrecision();
}

TEST_F(l2_sample_test, dtype_loop)
{
    vector<aclDataType> dtypes{ACL_INT8, ACL_UINT8};
    for (auto dtype : dtypes) {
        auto grad = TensorDesc({2, 1, 1, 1}, dtype, ACL_FORMAT_ND);
        auto self = TensorDesc({2, 2, 2, 2}, dtype, ACL_FORMAT_ND);
        auto out = TensorDesc({2, 2, 2, 2}, dtype, ACL_FORMAT_ND);
        auto ut = OP_API_UT(aclnnAdaptiveAvgPool3dBackward, INPUT(grad, self), OUTPUT(out));
        uint64_t workspace_size = 0;
        aclnnStatus aclRet = ut.TestGetWorkspaceSize(&workspace_size);
        EXPECT_EQ(aclRet, ACLNN_ERR_PARAM_INVALID);
    }
}

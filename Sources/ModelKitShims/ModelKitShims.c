#include "ModelKitShims.h"

uint32_t _modelkit_change_epoch = 1;

  if (nbInputs <= {{shape_input}}) return -1;
  (void)exprBuilder;
  for (int32_t i = 0; i < nbOutputs; ++i) outputs[i] = inputs[{{shape_input}}];
  return 0;
